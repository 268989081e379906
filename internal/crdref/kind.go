package crdref

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func renderCRD(w *strings.Builder, c apiextensionsv1.CustomResourceDefinition) error {
	names := c.Spec.Names
	fmt.Fprintf(w, "\n## %s\n\n", names.Kind)
	if d := rootDescription(c); d != "" {
		fmt.Fprintf(w, "%s\n\n", text(d))
	}
	var versions []string
	for _, v := range c.Spec.Versions {
		var notes []string
		if v.Served {
			notes = append(notes, "served")
		}
		if v.Storage {
			notes = append(notes, "storage")
		}
		if v.Deprecated {
			notes = append(notes, "deprecated")
		}
		versions = append(versions, fmt.Sprintf("%s (%s)", code(c.Spec.Group+"/"+v.Name), strings.Join(notes, ", ")))
	}
	w.WriteString("| | |\n|---|---|\n")
	fmt.Fprintf(w, "| API version | %s |\n", strings.Join(versions, "; "))
	fmt.Fprintf(w, "| scope | %s |\n", c.Spec.Scope)
	fmt.Fprintf(w, "| resource | %s (singular %s, list kind %s) |\n", code(names.Plural), code(names.Singular), code(names.ListKind))
	if len(names.ShortNames) > 0 {
		fmt.Fprintf(w, "| short names | %s |\n", codeList(names.ShortNames))
	}
	if len(names.Categories) > 0 {
		fmt.Fprintf(w, "| categories | %s |\n", codeList(names.Categories))
	}

	for i, v := range c.Spec.Versions {
		if i == 0 {
			if s := subresources(v.Subresources); s != "" {
				fmt.Fprintf(w, "| subresources | %s |\n", s)
			}
		}
		suffix := ""
		if len(c.Spec.Versions) > 1 {
			suffix = " (" + code(v.Name) + ")"
			if s := subresources(v.Subresources); s != "" {
				fmt.Fprintf(w, "\nSubresources%s: %s\n", suffix, s)
			}
		}
		if err := renderVersion(w, names.Plural, v, suffix); err != nil {
			return fmt.Errorf("version %s: %w", v.Name, err)
		}
	}
	return nil
}

func subresources(s *apiextensionsv1.CustomResourceSubresources) string {
	if s == nil {
		return ""
	}
	var out []string
	if s.Status != nil {
		out = append(out, code("status"))
	}
	if sc := s.Scale; sc != nil {
		parts := []string{"spec " + code(sc.SpecReplicasPath), "status " + code(sc.StatusReplicasPath)}
		if sc.LabelSelectorPath != nil {
			parts = append(parts, "selector "+code(*sc.LabelSelectorPath))
		}
		out = append(out, code("scale")+" ("+strings.Join(parts, ", ")+")")
	}
	return strings.Join(out, "; ")
}

func renderVersion(w *strings.Builder, plural string, v apiextensionsv1.CustomResourceDefinitionVersion, suffix string) error {
	if len(v.AdditionalPrinterColumns) > 0 {
		fmt.Fprintf(w, "\n### Printer columns%s\n\n", suffix)
		fmt.Fprintf(w, "What `kubectl get %s` shows; `-o wide` adds the columns of priority above 0.\n\n", plural)
		described := slices.ContainsFunc(v.AdditionalPrinterColumns, func(c apiextensionsv1.CustomResourceColumnDefinition) bool {
			return c.Description != ""
		})
		w.WriteString("| column | type | JSONPath | shown |")
		if described {
			w.WriteString(" description |")
		}
		w.WriteString("\n|---|---|---|---|")
		if described {
			w.WriteString("---|")
		}
		w.WriteString("\n")
		for _, col := range v.AdditionalPrinterColumns {
			shown := "always"
			if col.Priority > 0 {
				shown = "`-o wide`"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s |", text(col.Name), col.Type, code(col.JSONPath), shown)
			if described {
				fmt.Fprintf(w, " %s |", text(col.Description))
			}
			w.WriteString("\n")
		}
	}
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return errors.New("no openAPIV3Schema")
	}
	root := v.Schema.OpenAPIV3Schema
	var rows []fieldRow
	var rules []ruleRow
	rules = appendRules(rules, "(the object)", root)
	for _, name := range slices.Sorted(maps.Keys(root.Properties)) {
		if name == "apiVersion" || name == "kind" || name == "metadata" {
			continue
		}
		rows, rules = walk(rows, rules, name, root.Properties[name], slices.Contains(root.Required, name))
	}

	fmt.Fprintf(w, "\n### Fields%s\n\n", suffix)
	w.WriteString("`[]` stands for every item of a list.\n\n")
	w.WriteString("| field | type | required | default | validation | description |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		req := ""
		if r.required {
			req = "yes"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", code(r.path), r.typ, req, r.def, r.validation, text(r.description))
	}
	if len(rules) > 0 {
		fmt.Fprintf(w, "\n### Validation rules%s\n\n", suffix)
		w.WriteString("CEL rules the apiserver checks; a change that breaks one is refused with its message.\n\n")
		w.WriteString("| field | rule | message |\n|---|---|---|\n")
		for _, r := range rules {
			fmt.Fprintf(w, "| %s | %s | %s |\n", r.path, code(r.rule), r.message)
		}
	}
	return nil
}
