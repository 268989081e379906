package localkube

import (
	"strings"
	"unicode/utf8"
)

// expand replaces $(VAR) references the way the kubelet does for command,
// args and env values: $$ escapes a dollar, and a reference to an unknown
// variable is left as written so that a typo stays visible in the process's
// arguments instead of silently becoming an empty string.
func expand(input string, lookup func(string) (string, bool)) string {
	var buf strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] != '$' || cursor+1 >= len(input) {
			continue
		}
		buf.WriteString(input[checkpoint:cursor])
		read, isVar, advance := readVariableName(input[cursor+1:])
		if isVar {
			if v, ok := lookup(read); ok {
				buf.WriteString(v)
			} else {
				buf.WriteString("$(" + read + ")")
			}
		} else {
			buf.WriteString(read)
		}
		cursor += advance
		checkpoint = cursor + 1
	}
	return buf.String() + input[checkpoint:]
}

func readVariableName(input string) (string, bool, int) {
	r, size := utf8.DecodeRuneInString(input)
	switch r {
	case '$':
		return input[:size], false, size
	case '(':
		for i := 1; i < len(input); i++ {
			if input[i] == ')' {
				return input[1:i], true, i + 1
			}
		}
		return "$(", false, 1
	default:
		return "$" + string(r), false, size
	}
}

// mapLookup adapts an ordered env list (later entries win) to expand.
func mapLookup(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}
