package manifests

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// selector is one metric a PromQL expression reads, with its matchers.
type selector struct {
	metric   string
	matchers []matcher
}

type matcher struct{ label, op, value string }

// PromQL words that are not metric names. Functions and aggregations must
// be followed by "(", so a misspelt function fails instead of passing as a
// metric.
var (
	promqlFunctions = wordSet(`abs absent absent_over_time avg_over_time ceil changes clamp clamp_max clamp_min
		count_over_time day_of_month day_of_week days_in_month delta deriv exp floor histogram_quantile hour
		idelta increase irate label_join label_replace last_over_time ln log10 log2 max_over_time min_over_time
		minute month predict_linear present_over_time quantile_over_time rate resets round scalar sgn sort
		sort_desc sqrt stddev_over_time stdvar_over_time sum_over_time time timestamp vector year`)
	promqlAggregations = wordSet(`sum min max avg group stddev stdvar count count_values bottomk topk quantile`)
	// Followed by a list of label names in parentheses.
	promqlLabelLists = wordSet(`by without on ignoring group_left group_right`)
	promqlKeywords   = wordSet(`and or unless bool offset atan2`)
)

func wordSet(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.Fields(s) {
		out[w] = true
	}
	return out
}

// parsePromQL checks that expr is well formed as far as the dashboard and
// the rules need (balanced brackets, closed strings, known functions,
// matchers of the form label op "value") and returns the metrics it reads.
// Grafana's variables ($var, ${var}, $__rate_interval) stand for a value.
func parsePromQL(expr string) ([]selector, error) {
	var out []selector
	var stack []byte // open brackets; 'L' is a label list such as by (...)
	top := func() byte {
		if len(stack) == 0 {
			return 0
		}
		return stack[len(stack)-1]
	}
	i := 0
	skipSpace := func() {
		for i < len(expr) && strings.ContainsRune(" \t\r\n", rune(expr[i])) {
			i++
		}
	}
	ident := func() string {
		start := i
		for i < len(expr) && isIdentChar(expr[i], i == start) {
			i++
		}
		return expr[start:i]
	}
	str := func() (string, error) {
		q := expr[i]
		var b strings.Builder
		for i++; i < len(expr); i++ {
			switch {
			case expr[i] == '\\' && q != '`' && i+1 < len(expr):
				i++
				b.WriteByte(expr[i])
			case expr[i] == q:
				i++
				return b.String(), nil
			default:
				b.WriteByte(expr[i])
			}
		}
		return "", fmt.Errorf("unterminated string in %q", expr)
	}
	for skipSpace(); i < len(expr); skipSpace() {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			if _, err := str(); err != nil {
				return nil, err
			}
		case c == '$':
			i++
			if i < len(expr) && expr[i] == '{' {
				end := strings.IndexByte(expr[i:], '}')
				if end < 0 {
					return nil, fmt.Errorf("unterminated ${ in %q", expr)
				}
				i += end + 1
			} else if ident() == "" {
				return nil, fmt.Errorf("a lone $ in %q", expr)
			}
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (isIdentChar(expr[i], false) || expr[i] == '.') {
				i++ // a number or a duration
			}
		case isIdentChar(c, true):
			word := ident()
			skipSpace()
			next := byte(0)
			if i < len(expr) {
				next = expr[i]
			}
			switch {
			case top() == '{' || top() == 'L' || top() == '[':
				// A label name or a duration.
			case promqlLabelLists[word]:
				if next != '(' {
					return nil, fmt.Errorf("%s without a label list in %q", word, expr)
				}
				i++
				stack = append(stack, 'L')
			case promqlKeywords[word], promqlAggregations[word]:
				// An aggregation's parentheses may come after by (...).
			case promqlFunctions[word]:
				if next != '(' {
					return nil, fmt.Errorf("function %s without arguments in %q", word, expr)
				}
			case next == '(':
				return nil, fmt.Errorf("unknown function %s in %q", word, expr)
			default:
				sel := selector{metric: word}
				if next == '{' {
					i++
					ms, err := matchers(expr, &i, str, ident, skipSpace)
					if err != nil {
						return nil, err
					}
					sel.matchers = ms
				}
				out = append(out, sel)
			}
		case c == '(' || c == '{' || c == '[':
			stack = append(stack, c)
			i++
		case c == ')' || c == '}' || c == ']':
			open := map[byte]string{')': "(L", '}': "{", ']': "["}[c]
			if !strings.ContainsRune(open, rune(top())) {
				return nil, fmt.Errorf("unbalanced %c in %q", c, expr)
			}
			stack = stack[:len(stack)-1]
			i++
		case strings.ContainsRune("+-*/%^=!<>,~:@", rune(c)):
			i++
		default:
			return nil, fmt.Errorf("unexpected %q in %q", c, expr)
		}
	}
	if len(stack) > 0 {
		return nil, fmt.Errorf("unclosed %q in %q", stack, expr)
	}
	return out, nil
}

// matchers reads `label op "value", ...}` after a metric's opening brace.
func matchers(expr string, i *int, str func() (string, error), ident func() string, skipSpace func()) ([]matcher, error) {
	var out []matcher
	for {
		skipSpace()
		if *i < len(expr) && expr[*i] == '}' {
			*i++
			return out, nil
		}
		label := ident()
		skipSpace()
		op := ""
		for _, o := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(expr[*i:], o) {
				op = o
				break
			}
		}
		if label == "" || op == "" {
			return nil, fmt.Errorf("bad matcher at %q in %q", expr[*i:], expr)
		}
		*i += len(op)
		skipSpace()
		if *i >= len(expr) || !strings.ContainsRune("\"'`", rune(expr[*i])) {
			return nil, fmt.Errorf("matcher %s%s without a quoted value in %q", label, op, expr)
		}
		value, err := str()
		if err != nil {
			return nil, err
		}
		out = append(out, matcher{label: label, op: op, value: value})
		skipSpace()
		if *i < len(expr) && expr[*i] == ',' {
			*i++
		}
	}
}

func isIdentChar(c byte, first bool) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
}

func TestParsePromQL(t *testing.T) {
	for _, tc := range []struct {
		expr    string
		want    []string // metric{label op value ...}
		wantErr string
	}{
		{expr: `up`, want: []string{"up"}},
		{expr: `sum by (cmd) (rate(redis_commands_total{namespace="$namespace",pod=~"$pod"}[$__rate_interval]))`,
			want: []string{`redis_commands_total namespace="$namespace" pod=~"$pod"`}},
		{expr: `max by (namespace, pod) (a) - on (namespace, pod) group_right () b{x!="y, z"} > bool 0`,
			want: []string{"a", `b x!="y, z"`}},
		{expr: `min(v{a="1"}) - time() < 14 * 24 * 3600 and on (c) w offset 5m`, want: []string{`v a="1"`, "w"}},
		{expr: `x[5m:1m]`, want: []string{"x"}},
		{expr: `rat(x[5m])`, wantErr: "unknown function rat"},
		{expr: `sum(x`, wantErr: "unclosed"},
		{expr: `x{a="b"`, wantErr: "bad matcher"},
		{expr: `x{a=b}`, wantErr: "without a quoted value"},
		{expr: `x{a="b}`, wantErr: "unterminated string"},
		{expr: `sum(x))`, wantErr: "unbalanced"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			sels, err := parsePromQL(tc.expr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range sels {
				parts := []string{s.metric}
				for _, m := range s.matchers {
					parts = append(parts, m.label+m.op+`"`+m.value+`"`)
				}
				got = append(got, strings.Join(parts, " "))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// exposition is what a recorded /metrics page holds: every series name
// (with _sum, _count, _bucket as written) and, per name, the values seen
// for each label.
type exposition map[string]map[string]map[string]bool

// readExposition parses Prometheus text format files.
func readExposition(t *testing.T, paths ...string) exposition {
	t.Helper()
	out := exposition{}
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			name, labels, err := parseSeries(line)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if out[name] == nil {
				out[name] = map[string]map[string]bool{}
			}
			for k, v := range labels {
				if out[name][k] == nil {
					out[name][k] = map[string]bool{}
				}
				out[name][k][v] = true
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// parseSeries splits `name{a="x",b="y"} value` into its name and labels.
func parseSeries(line string) (string, map[string]string, error) {
	brace := strings.IndexByte(line, '{')
	if brace < 0 {
		name, _, ok := strings.Cut(line, " ")
		if !ok {
			return "", nil, fmt.Errorf("no value in %q", line)
		}
		return name, nil, nil
	}
	labels := map[string]string{}
	rest := line[brace+1:]
	for {
		if strings.HasPrefix(rest, "}") {
			return line[:brace], labels, nil
		}
		k, after, ok := strings.Cut(rest, `="`)
		if !ok {
			return "", nil, fmt.Errorf("bad labels in %q", line)
		}
		var v strings.Builder
		j := 0
		for ; j < len(after) && after[j] != '"'; j++ {
			if after[j] == '\\' && j+1 < len(after) {
				j++
			}
			v.WriteByte(after[j])
		}
		if j == len(after) {
			return "", nil, fmt.Errorf("unterminated label value in %q", line)
		}
		labels[k] = v.String()
		rest = strings.TrimPrefix(after[j+1:], ",")
	}
}
