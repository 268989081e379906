package crdref

import "strings"

func codeList(xs []string) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = code(x)
	}
	return strings.Join(out, ", ")
}

// code is an inline code span that is safe in a table cell: a pipe would
// end the cell even inside backticks.
func code(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}

var textEscaper = strings.NewReplacer(
	`\`, `\\`, "|", `\|`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", ">", "&gt;",
)

// text is prose for one table cell: one line, and no character that
// Markdown would take for emphasis, code or HTML (descriptions say
// *.{cluster}... and _momento_ literally).
func text(s string) string {
	return textEscaper.Replace(strings.Join(strings.Fields(s), " "))
}
