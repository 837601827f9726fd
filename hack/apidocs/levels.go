package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// A level is one object of the schema with its own fields: the root, spec, spec.storage, or
// the items of an array of objects (spec.tolerations[]) and the values of a map of objects
// (path{}). The page shows one level at a time, so that a field's row stays short and the
// nesting is a link rather than an indentation twenty levels deep.
type level struct {
	path   string
	schema apiextensionsv1.JSONSchemaProps
	fields []field
	// itemDescription is the description of an array's items or a map's values, which the
	// field's own description (shown with the field) does not repeat.
	itemDescription string
}

type field struct {
	name   string
	schema apiextensionsv1.JSONSchemaProps
}

// objectLevels returns the levels under root, depth first, each level's fields by name: the
// order of `kubectl explain --recursive`.
func objectLevels(root *apiextensionsv1.JSONSchemaProps) []level {
	var out []level
	var walk func(path string, s apiextensionsv1.JSONSchemaProps, itemDescription string)
	walk = func(path string, s apiextensionsv1.JSONSchemaProps, itemDescription string) {
		l := level{path: path, schema: s, itemDescription: itemDescription}
		for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
			l.fields = append(l.fields, field{name, s.Properties[name]})
		}
		out = append(out, l)
		for _, f := range l.fields {
			child := childLevel(path, f)
			if child == "" {
				continue
			}
			switch inner := f.schema; {
			case isObject(inner):
				walk(child, inner, "")
			case inner.Items != nil && inner.Items.Schema != nil:
				walk(child, *inner.Items.Schema, inner.Items.Schema.Description)
			default:
				walk(child, *inner.AdditionalProperties.Schema, inner.AdditionalProperties.Schema.Description)
			}
		}
	}
	walk("", *root, "")
	return out
}

// childLevel returns the path of the level that holds the fields of f's value, or "" when its
// value has no fields of its own (a string, a list of strings, a map of strings).
func childLevel(parent string, f field) string {
	path := join(parent, f.name)
	switch s := f.schema; {
	case isObject(s):
		return path
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil && isObject(*s.Items.Schema):
		return path + "[]"
	case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil && isObject(*s.AdditionalProperties.Schema):
		return path + "{}"
	}
	return ""
}

// isObject says whether s lists fields. An object without (metadata, or one that keeps any
// field) is documented as a value, not a level.
func isObject(s apiextensionsv1.JSONSchemaProps) bool { return len(s.Properties) > 0 }

// jsonValue shows a default or an enum value as code: a string as it is (`password`), the
// empty string and anything else as compact JSON.
func jsonValue(raw []byte) string {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" && strings.TrimSpace(s) == s {
		return code(s)
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return code(string(raw))
	}
	return code(b.String())
}

func number(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
