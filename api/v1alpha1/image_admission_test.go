package v1alpha1_test

import (
	"fmt"
	"testing"
)

func imageManifest(fields string) string {
	return fmt.Sprintf(`apiVersion: valkey.gomomento.com/v1alpha1
kind: ValkeyImage
metadata:
  name: valkey-test
spec:
%s`, fields)
}

func TestValkeyImageAdmission(t *testing.T) {
	runAdmission(t, []admissionCase{
		{name: "valid 8.0.1", manifest: imageManifest("  repository: valkey/valkey\n  tag: 8.0.1\n  version: 8.0.1\n")},
		{name: "valid 9.0.1", manifest: imageManifest("  repository: valkey/valkey\n  tag: 9.0.1-alpine\n  version: 9.0.1\n")},
		{name: "valid two-digit major", manifest: imageManifest("  repository: valkey/valkey\n  tag: next\n  version: 10.0.0\n")},
		{name: "missing repository", manifest: imageManifest("  tag: 8.0.1\n  version: 8.0.1\n"),
			want: []string{"spec.repository", "Required value"}},
		{name: "empty repository", manifest: imageManifest("  repository: \"\"\n  tag: 8.0.1\n  version: 8.0.1\n"),
			want: []string{"spec.repository"}},
		{name: "missing tag", manifest: imageManifest("  repository: valkey/valkey\n  version: 8.0.1\n"),
			want: []string{"spec.tag", "Required value"}},
		{name: "missing version", manifest: imageManifest("  repository: valkey/valkey\n  tag: 8.0.1\n"),
			want: []string{"spec.version", "Required value"}},
		{name: "partial version", manifest: imageManifest("  repository: valkey/valkey\n  tag: \"8.0\"\n  version: \"8.0\"\n"),
			want: []string{"spec.version", "should match"}},
		{name: "version with suffix", manifest: imageManifest("  repository: valkey/valkey\n  tag: 8.0.1\n  version: 8.0.1-rc1\n"),
			want: []string{"spec.version", "should match"}},
		{name: "version below floor", manifest: imageManifest("  repository: valkey/valkey\n  tag: 7.2.4\n  version: 7.2.4\n"),
			want: []string{"spec.version", "version must be at least 8.0.0"}},
		{name: "missing spec", manifest: "apiVersion: valkey.gomomento.com/v1alpha1\nkind: ValkeyImage\nmetadata:\n  name: valkey-test\n",
			want: []string{"spec", "Required value"}},
	})
}
