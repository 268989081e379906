package crdref

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

type fieldRow struct {
	path, typ, def, validation, description string
	required                                bool
}

type ruleRow struct {
	path, rule, message string
}

// walk appends the row of the field at path and of everything under it.
func walk(rows []fieldRow, rules []ruleRow, path string, s apiextensionsv1.JSONSchemaProps, required bool) ([]fieldRow, []ruleRow) {
	desc := s.Description
	item := itemSchema(s)
	if desc == "" && item != nil {
		desc = item.Description
	}
	constraints := limits(s)
	if len(s.XValidations) > 0 {
		constraints = append(constraints, ruleCount(len(s.XValidations)))
	}
	if item != nil {
		if c := scalarConstraints(*item); c != "" {
			constraints = append(constraints, "items: "+c)
		}
	}
	value := valueSchema(s)
	if value != nil {
		if c := scalarConstraints(*value); c != "" {
			constraints = append(constraints, "values: "+c)
		}
	}
	rows = append(rows, fieldRow{
		path:        path,
		typ:         typeOf(s),
		def:         defaultOf(s.Default),
		validation:  strings.Join(constraints, "; "),
		description: desc,
		required:    required,
	})
	rules = appendRules(rules, code(path), &s)

	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		rows, rules = walk(rows, rules, path+"."+name, s.Properties[name], slices.Contains(s.Required, name))
	}
	if item != nil {
		rules = appendRules(rules, code(path+"[]"), item)
		for _, name := range slices.Sorted(maps.Keys(item.Properties)) {
			rows, rules = walk(rows, rules, path+"[]."+name, item.Properties[name], slices.Contains(item.Required, name))
		}
	}
	if value != nil {
		rules = appendRules(rules, code(path+".*"), value)
		for _, name := range slices.Sorted(maps.Keys(value.Properties)) {
			rows, rules = walk(rows, rules, path+".*."+name, value.Properties[name], slices.Contains(value.Required, name))
		}
	}
	return rows, rules
}

func ruleCount(n int) string {
	if n == 1 {
		return "1 CEL rule (below)"
	}
	return fmt.Sprintf("%d CEL rules (below)", n)
}

// scalarConstraints describes the item or value schema of a list or map,
// whose own row does not exist.
func scalarConstraints(s apiextensionsv1.JSONSchemaProps) string {
	c := limits(s)
	if len(s.XValidations) > 0 {
		c = append(c, ruleCount(len(s.XValidations)))
	}
	return strings.Join(c, ", ")
}

func appendRules(rules []ruleRow, path string, s *apiextensionsv1.JSONSchemaProps) []ruleRow {
	for _, v := range s.XValidations {
		msg := text(v.Message)
		if v.MessageExpression != "" {
			msg = "message expression " + code(v.MessageExpression)
		}
		if msg == "" {
			msg = "(the rule itself)"
		}
		if v.FieldPath != "" {
			msg += "; reported at " + code(v.FieldPath)
		}
		if v.Reason != nil {
			msg += "; reason " + code(string(*v.Reason))
		}
		rules = append(rules, ruleRow{path: path, rule: v.Rule, message: msg})
	}
	return rules
}

func itemSchema(s apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	if s.Items == nil {
		return nil
	}
	return s.Items.Schema
}

func valueSchema(s apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	if s.AdditionalProperties == nil {
		return nil
	}
	return s.AdditionalProperties.Schema
}

func typeOf(s apiextensionsv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString:
		return "int or string"
	case s.Type == "array":
		if item := itemSchema(s); item != nil {
			return "[]" + typeOf(*item)
		}
		return "[]any"
	case s.Type == "object" && valueSchema(s) != nil:
		return "map[string]" + typeOf(*valueSchema(s))
	case s.Type == "":
		return "any"
	case s.Format != "":
		return fmt.Sprintf("%s (%s)", s.Type, s.Format)
	}
	if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
		return s.Type + " (any fields)"
	}
	return s.Type
}

func limits(s apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	if len(s.Enum) > 0 {
		vals := make([]string, 0, len(s.Enum))
		for _, e := range s.Enum {
			vals = append(vals, jsonValue(e.Raw))
		}
		out = append(out, "one of "+strings.Join(vals, ", "))
	}
	bound := func(name string, v *float64, exclusive bool) {
		if v == nil {
			return
		}
		b := name + " " + strconv.FormatFloat(*v, 'f', -1, 64)
		if exclusive {
			b += " (exclusive)"
		}
		out = append(out, b)
	}
	bound("minimum", s.Minimum, s.ExclusiveMinimum)
	bound("maximum", s.Maximum, s.ExclusiveMaximum)
	if s.MultipleOf != nil {
		out = append(out, "multiple of "+strconv.FormatFloat(*s.MultipleOf, 'f', -1, 64))
	}
	count := func(name string, v *int64) {
		if v != nil {
			out = append(out, fmt.Sprintf("%s %d", name, *v))
		}
	}
	count("minLength", s.MinLength)
	count("maxLength", s.MaxLength)
	count("minItems", s.MinItems)
	count("maxItems", s.MaxItems)
	count("minProperties", s.MinProperties)
	count("maxProperties", s.MaxProperties)
	if s.Pattern != "" {
		out = append(out, "pattern "+code(s.Pattern))
	}
	if s.UniqueItems {
		out = append(out, "unique items")
	}
	if s.XListType != nil {
		switch lt := *s.XListType; lt {
		case "map":
			out = append(out, "list map keyed by "+codeList(s.XListMapKeys))
		default:
			out = append(out, lt+" list")
		}
	}
	if s.XMapType != nil {
		out = append(out, *s.XMapType+" map")
	}
	if s.Nullable {
		out = append(out, "nullable")
	}
	return out
}

func defaultOf(d *apiextensionsv1.JSON) string {
	if d == nil {
		return ""
	}
	return jsonValue(d.Raw)
}

// jsonValue shows a JSON value as code: strings without their quotes,
// everything else compact.
func jsonValue(raw []byte) string {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return code(s)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return code(string(raw))
	}
	return code(buf.String())
}
