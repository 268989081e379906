// Package textutil holds string helpers that several packages need and that
// belong to none of them. It imports nothing of the project, so every
// package can use it.
package textutil

// Truncate cuts s to at most n bytes, with no marker: condition messages,
// event notes and error texts have length limits. The cut counts bytes, as
// those limits do, so it may split a multi-byte character at the end.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
