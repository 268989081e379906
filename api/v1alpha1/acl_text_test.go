package v1alpha1_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// The renderer's checks and the CEL rules must draw the same line: text
// admission takes but the renderer refuses would hold a cluster's ACL
// forever, text the renderer takes but admission refuses means a rule
// was added to one side only.
func TestACLTextChecksAgreeWithAdmission(t *testing.T) {
	globs := []string{
		"app:*", "user(1):*", "f(x[)]", "(", "a)b", "日本:*", `a\b`, "~*", "%R~x", "+@all",
		"f(x)", ")", "a b", "a\tb", "a\nb", "a\x00b", "a\u00a0b", "a\u3000b", "a\u2028b", "a\u0085b", `a"b`, "a'b",
	}
	for i, g := range globs {
		t.Run(strconv.Quote(g), func(t *testing.T) {
			m := clusterWithACL(bindingWith(fmt.Sprintf("u%d", i), oneHash,
				fmt.Sprintf("[{roleRef: r, keys: [{pattern: %s}], channels: [%s]}]", strconv.Quote(g), strconv.Quote(g))))
			admitted := create(t, m) == nil
			rendered := v1alpha1.CheckGlob(g) == nil
			if admitted != rendered {
				t.Fatalf("admitted=%v, CheckGlob accepts=%v (%v)", admitted, rendered, v1alpha1.CheckGlob(g))
			}
		})
	}
	names := []string{"get", "client-list", "x_1", "GET", "get)", "get set", "1get", "@read", "cluster|info", "a\nb", "ключ"}
	for _, n := range names {
		t.Run("name "+strconv.Quote(n), func(t *testing.T) {
			m := roleManifest(fmt.Sprintf("  categories: [{name: %s, access: allow}]\n  commands: [{name: %s, subcommand: %s, access: allow}]\n",
				strconv.Quote(n), strconv.Quote(n), strconv.Quote(n)))
			admitted := create(t, m) == nil
			rendered := v1alpha1.CheckACLName(n) == nil
			if admitted != rendered {
				t.Fatalf("admitted=%v, CheckACLName accepts=%v", admitted, rendered)
			}
		})
	}
	users := []string{"app", "team-batch", "a_b", "default", "a b", "a)", "_momento_x", "ünï"}
	for _, u := range users {
		t.Run("username "+strconv.Quote(u), func(t *testing.T) {
			admitted := create(t, clusterWithACL(bindingWith(u, oneHash, onePerm))) == nil
			rendered := v1alpha1.CheckUsername(u) == nil
			if admitted != rendered {
				t.Fatalf("admitted=%v, CheckUsername accepts=%v", admitted, rendered)
			}
		})
	}
}
