package crdref

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomomento/valkey-operator/internal/testbin"
)

// The committed reference must be exactly what the CRDs render to; run
// `make generate` when this fails.
func TestReferenceIsCurrent(t *testing.T) {
	root, err := testbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	want, err := RenderDir(filepath.Join(root, "config", "crd", "bases"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, "docs", "reference.md"))
	if err != nil {
		t.Fatalf("reading docs/reference.md: %v (run make generate)", err)
	}
	if string(got) != want {
		t.Errorf("docs/reference.md is stale: run make generate")
	}
}

const widgetCRD = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: Widget
    listKind: WidgetList
    plural: widgets
    singular: widget
    shortNames: [wd]
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.size
        statusReplicasPath: .status.size
    additionalPrinterColumns:
    - jsonPath: .spec.size
      name: Size
      type: integer
    - jsonPath: .status.note
      name: Note
      type: string
      priority: 1
    schema:
      openAPIV3Schema:
        description: Widget is a test kind.
        x-kubernetes-validations:
        - rule: self.metadata.name.size() <= 10
          message: name too long
        properties:
          apiVersion:
            type: string
          kind:
            type: string
          metadata:
            type: object
          spec:
            description: |-
              Spec of a widget,
              over two lines.
            required: [size]
            properties:
              size:
                type: integer
                format: int32
                minimum: 1
                maximum: 9
              mode:
                type: string
                enum: [fast, slow]
                default: fast
              labels:
                type: object
                additionalProperties:
                  type: string
                x-kubernetes-validations:
                - rule: self.all(k, k != 'a' || k != 'b')
                  message: keys a or b
                  fieldPath: .labels
              hashes:
                type: array
                maxItems: 2
                items:
                  type: string
                  maxLength: 64
                  pattern: ^[0-9a-f]+$
              parts:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  description: Part of a widget.
                  required: [name]
                  properties:
                    name:
                      type: string
                      description: The *name*, under _prefix_, like a|b.
                  type: object
            type: object
          status:
            type: object
        type: object
`

const gadgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names:
    kind: Gadget
    listKind: GadgetList
    plural: gadgets
    singular: gadget
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
`

func TestRender(t *testing.T) {
	cases := []struct {
		name    string
		in      []string
		want    []string
		wantErr string
	}{
		{
			name: "header and names",
			in:   []string{widgetCRD},
			want: []string{
				"| [Widget](#widget) | Namespaced | `wd` | Widget is a test kind. |",
				"## Widget\n\nWidget is a test kind.\n",
				"| API version | `example.com/v1` (served, storage) |",
				"| resource | `widgets` (singular `widget`, list kind `WidgetList`) |",
				"| subresources | `status`; `scale` (spec `.spec.size`, status `.status.size`) |",
			},
		},
		{
			name: "printer columns",
			in:   []string{widgetCRD},
			want: []string{
				"| column | type | JSONPath | shown |\n|---|---|---|---|\n",
				"| Size | integer | `.spec.size` | always |",
				"| Note | string | `.status.note` | `-o wide` |",
			},
		},
		{
			name: "field rows",
			in:   []string{widgetCRD},
			want: []string{
				"| `spec` | object |  |  |  | Spec of a widget, over two lines. |",
				"| `spec.size` | integer (int32) | yes |  | minimum 1; maximum 9 |  |",
				"| `spec.mode` | string |  | `fast` | one of `fast`, `slow` |  |",
				"| `spec.labels` | map[string]string |  |  | 1 CEL rule (below) |  |",
				"| `spec.hashes` | []string |  |  | maxItems 2; items: maxLength 64, pattern `^[0-9a-f]+$` |  |",
				"| `spec.parts` | []object |  |  | list map keyed by `name` | Part of a widget. |",
				"| `spec.parts[].name` | string | yes |  |  | The \\*name\\*, under \\_prefix\\_, like a\\|b. |",
				"| `status` | object |  |  |  |  |",
			},
		},
		{
			name: "rules with pipes stay in their cell",
			in:   []string{widgetCRD},
			want: []string{
				"| (the object) | `self.metadata.name.size() <= 10` | name too long |",
				"| `spec.labels` | `self.all(k, k != 'a' \\|\\| k != 'b')` | keys a or b; reported at `.labels` |",
			},
		},
		{
			name: "cluster-scoped kinds first, whatever the input order",
			in:   []string{widgetCRD, gadgetCRD},
			want: []string{"| [Gadget](#gadget) | Cluster |  |  |\n| [Widget](#widget) |"},
		},
		{
			name: "several documents in one input",
			in:   []string{widgetCRD + "\n---\n" + gadgetCRD},
			want: []string{"## Gadget", "## Widget"},
		},
		{
			name:    "not a CRD",
			in:      []string{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"},
			wantErr: `ConfigMap "x" is not a CustomResourceDefinition`,
		},
		{
			name:    "nothing",
			in:      []string{"---\n"},
			wantErr: "no CustomResourceDefinition",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := make([][]byte, len(tc.in))
			for i, s := range tc.in {
				in[i] = []byte(s)
			}
			got, err := render(in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q\n%s", w, got)
				}
			}
		})
	}
}

func TestRenderLeavesOutStandardFields(t *testing.T) {
	got, err := render([][]byte{[]byte(widgetCRD)})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"`apiVersion` |", "`kind` |", "`metadata` |"} {
		if strings.Contains(got, "| "+f) {
			t.Errorf("row for %s rendered", f)
		}
	}
}
