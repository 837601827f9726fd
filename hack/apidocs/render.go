package main

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// page collects the generated Markdown.
type page struct{ b strings.Builder }

func (p *page) line(parts ...string) { p.b.WriteString(strings.Join(parts, "") + "\n") }

// lines writes text wrapped, every line indented by indent (the first by first).
func (p *page) lines(text, first, indent string) {
	for _, l := range wrap(text, first, indent) {
		p.line(l)
	}
}

// paragraphs writes each paragraph of a description wrapped and indented, a blank line before
// each.
func (p *page) paragraphs(description, indent string) {
	for _, para := range prose(description) {
		p.line()
		p.lines(para, indent, indent)
	}
}

// render returns the generated section: an index of the kinds, then for each kind each served
// version, its printer columns, its CEL rules by field, and its fields level by level.
func render(crds []apiextensionsv1.CustomResourceDefinition) string {
	p := &page{}
	p.line()
	p.line("| kind | served versions | short names | categories | scope |")
	p.line("| --- | --- | --- | --- | --- |")
	for _, crd := range crds {
		var versions []string
		for _, v := range served(crd) {
			link := fmt.Sprintf("[%s](#%s)", v.Name, anchor(crd.Spec.Names.Kind, v.Name))
			if v.Storage {
				link += " (storage)"
			}
			versions = append(versions, link)
		}
		p.line("| ", crd.Spec.Names.Kind, " | ", strings.Join(versions, ", "), " | ",
			codes(crd.Spec.Names.ShortNames), " | ", codes(crd.Spec.Names.Categories), " | ", string(crd.Spec.Scope), " |")
	}
	for _, crd := range crds {
		for _, v := range served(crd) {
			renderVersion(p, crd, v)
		}
	}
	p.line()
	return p.b.String()
}

// served returns the versions the API server serves, in the CRD's order.
func served(crd apiextensionsv1.CustomResourceDefinition) []apiextensionsv1.CustomResourceDefinitionVersion {
	var out []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range crd.Spec.Versions {
		if v.Served {
			out = append(out, v)
		}
	}
	return out
}

func codes(items []string) string {
	var out []string
	for _, s := range items {
		out = append(out, code(s))
	}
	return strings.Join(out, ", ")
}

func renderVersion(p *page, crd apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion) {
	names := crd.Spec.Names
	id := anchor(names.Kind, v.Name)
	p.line()
	p.line("### ", names.Kind, " ", v.Name)
	p.line()
	about := fmt.Sprintf("`apiVersion: %s/%s`, `kind: %s` (resource `%s`, list `%s`): served", crd.Spec.Group, v.Name, names.Kind, names.Plural, names.ListKind)
	if v.Storage {
		about += ", the storage version (objects are stored in it)"
	} else {
		about += ", converted to and from the storage version"
	}
	about += "; " + strings.ToLower(string(crd.Spec.Scope))
	if s := v.Subresources; s != nil {
		var subs []string
		if s.Status != nil {
			subs = append(subs, "`status`")
		}
		if s.Scale != nil {
			subs = append(subs, "`scale`")
		}
		if len(subs) > 0 {
			about += ", subresources " + strings.Join(subs, " and ")
		}
	}
	p.lines(about+".", "", "")
	if v.Deprecated {
		warning := "this version is deprecated."
		if v.DeprecationWarning != nil {
			warning = *v.DeprecationWarning
		}
		p.line()
		p.lines("**Deprecated**: "+strings.Join(prose(warning), " "), "", "")
	}
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return
	}
	root := v.Schema.OpenAPIV3Schema
	p.paragraphs(root.Description, "")
	renderColumns(p, names, v.AdditionalPrinterColumns)
	levels := objectLevels(root)
	renderRuleIndex(p, id, levels)
	p.line()
	p.lines(fmt.Sprintf("Fields, one object at a time (`kubectl explain %s.<field> --api-version=%s/%s` shows the same descriptions):",
		names.Plural, crd.Spec.Group, v.Name), "", "")
	for _, l := range levels {
		renderLevel(p, id, l)
	}
}

func renderColumns(p *page, names apiextensionsv1.CustomResourceDefinitionNames, columns []apiextensionsv1.CustomResourceColumnDefinition) {
	p.line()
	if len(columns) == 0 {
		p.line("`kubectl get ", names.Plural, "` shows the default columns `NAME` and `AGE`.")
		return
	}
	p.lines(fmt.Sprintf("`kubectl get %s` shows `NAME`, then these columns; the wide ones only with `-o wide`:", names.Plural), "", "")
	p.line()
	p.line("| column | JSONPath | type | shown | description |")
	p.line("| --- | --- | --- | --- | --- |")
	for _, c := range columns {
		shown := "always"
		if c.Priority > 0 {
			shown = fmt.Sprintf("wide (priority %d)", c.Priority)
		}
		typ := c.Type
		if c.Format != "" {
			typ += " (" + c.Format + ")"
		}
		p.line("| ", strings.ToUpper(c.Name), " | ", cell(code(c.JSONPath)), " | ", typ, " | ", shown, " | ", cell(strings.Join(prose(c.Description), " ")), " |")
	}
}

// renderRuleIndex lists every CEL rule's message by the field it is on, a glance at what the
// API server refuses; each field links to its level.
func renderRuleIndex(p *page, id string, levels []level) {
	var rows []string
	for _, l := range levels {
		add := func(path string, rules apiextensionsv1.ValidationRules) {
			for _, r := range rules {
				rows = append(rows, fmt.Sprintf("| [%s](#%s) | %s | %s |", code(displayPath(path)), anchor(id, l.path), checkedOn(r), cell(message(r))))
			}
		}
		add(l.path, l.schema.XValidations)
		for _, f := range l.fields {
			if !isObject(f.schema) {
				add(join(l.path, f.name), f.schema.XValidations)
			}
			for _, inner := range scalarContainers(f.schema) {
				add(join(l.path, f.name)+inner.suffix, inner.schema.XValidations)
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	p.line()
	p.line("CEL rules the API server checks, by field (each is shown with its expression below):")
	p.line()
	p.line("| field | checked on | message |")
	p.line("| --- | --- | --- |")
	for _, r := range rows {
		p.line(r)
	}
}

// checkedOn says when a rule runs: one that reads oldSelf is a transition rule, run on updates
// only unless it asks for optionalOldSelf.
func checkedOn(r apiextensionsv1.ValidationRule) string {
	if readsOldSelf(r.Rule) && (r.OptionalOldSelf == nil || !*r.OptionalOldSelf) {
		return "update"
	}
	return "create, update"
}

func readsOldSelf(rule string) bool {
	for i := strings.Index(rule, "oldSelf"); i >= 0; {
		end := i + len("oldSelf")
		if (i == 0 || !isIdent(rule[i-1])) && (end == len(rule) || !isIdent(rule[end])) {
			return true
		}
		next := strings.Index(rule[end:], "oldSelf")
		if next < 0 {
			break
		}
		i = end + next
	}
	return false
}

func isIdent(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// displayPath names a level or field for the reader; the root is the object itself.
func displayPath(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func renderLevel(p *page, id string, l level) {
	p.line()
	if l.path == "" {
		// The version's heading is the top level's anchor.
		p.line("**Top level**")
	} else {
		p.line(`<a id="`, anchor(id, l.path), `"></a>`)
		p.line()
		p.line("**", code(l.path), "**")
	}
	// An array's items and a map's values have their own description (the item type's doc
	// comment); an object's is shown with its field.
	p.paragraphs(l.itemDescription, "")
	if len(l.schema.XValidations) > 0 {
		p.line()
		if l.path == "" {
			p.line("Rules on the whole object (`self` is the object, metadata included):")
		} else {
			p.line("Rules on ", code(l.path), " (`self` is this object):")
		}
		p.line()
		renderRules(p, l.schema.XValidations, "")
	}
	for _, f := range l.fields {
		renderField(p, id, l, f)
	}
}

func renderField(p *page, id string, l level, f field) {
	summary := "**" + code(f.name) + "** " + typeName(f.schema)
	if slices.Contains(l.schema.Required, f.name) {
		summary += ", **required**"
	}
	if child := childLevel(l.path, f); child != "" {
		summary += fmt.Sprintf(", fields in [%s](#%s)", code(child), anchor(id, child))
	}
	for _, c := range constraints(f.schema) {
		summary += "; " + c
	}
	p.line()
	p.lines(summary, "- ", "  ")
	p.paragraphs(f.schema.Description, "  ")
	// An object's own rules are shown with its level, where self is that object.
	if len(f.schema.XValidations) > 0 && !isObject(f.schema) {
		p.line()
		p.line("  Rules:")
		p.line()
		renderRules(p, f.schema.XValidations, "  ")
	}
	for _, inner := range scalarContainers(f.schema) {
		p.line()
		p.line("  Rules on ", code(f.name+inner.suffix), ":")
		p.line()
		renderRules(p, inner.schema.XValidations, "  ")
	}
}

func renderRules(p *page, rules apiextensionsv1.ValidationRules, indent string) {
	for _, r := range rules {
		// '*', not '-': a rules list right before the fields' list must not merge with it.
		head := indent + "* " + code(r.Rule) + " (on " + strings.Replace(checkedOn(r), ", ", " and ", 1) + ")"
		if r.FieldPath != "" {
			head += ", reported on " + code(r.FieldPath)
		}
		if r.Reason != nil {
			head += ", reason " + code(string(*r.Reason))
		}
		text := "refused with: " + message(r)
		if r.MessageExpression != "" {
			text += " (the message is " + code(r.MessageExpression) + ")"
		}
		p.line(head + `\`)
		p.lines(text, indent+"  ", indent+"  ")
	}
}

// typeName is a field's type in Go-like words: string, integer (int32), []string,
// map[string]string, object, integer or string.
func typeName(s apiextensionsv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString:
		return "integer or string"
	case s.Type == "array":
		if s.Items != nil && s.Items.Schema != nil {
			return "[]" + typeName(*s.Items.Schema)
		}
		return "[]any"
	case s.Type == "object" && len(s.Properties) == 0 && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		return "map[string]" + typeName(*s.AdditionalProperties.Schema)
	case s.Type == "":
		return "any"
	}
	name := s.Type
	if s.Format != "" {
		name += " (" + s.Format + ")"
	}
	return name
}

// constraints lists what the schema says of a value besides its type, in the order a reader
// checks a value against them; those of an array's items or a map's values are prefixed.
func constraints(s apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	if s.Default != nil {
		out = append(out, "default "+jsonValue(s.Default.Raw))
	}
	out = append(out, bounds(s)...)
	if s.Nullable {
		out = append(out, "may be null")
	}
	if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
		out = append(out, "unknown fields are kept")
	}
	if s.XEmbeddedResource {
		out = append(out, "an embedded Kubernetes object")
	}
	switch {
	case s.XListType != nil && *s.XListType == "map":
		out = append(out, "a list map keyed by "+codes(s.XListMapKeys))
	case s.XListType != nil && *s.XListType == "set":
		out = append(out, "a set (no item twice)")
	case s.XListType != nil && *s.XListType == "atomic":
		out = append(out, "replaced as a whole")
	}
	if s.XMapType != nil && *s.XMapType != "" {
		out = append(out, *s.XMapType+" map")
	}
	if s.Type == "array" && s.Items != nil && s.Items.Schema != nil && !isObject(*s.Items.Schema) {
		if inner := constraints(*s.Items.Schema); len(inner) > 0 {
			out = append(out, "each item: "+strings.Join(inner, ", "))
		}
	}
	if ap := s.AdditionalProperties; s.Type == "object" && len(s.Properties) == 0 && ap != nil && ap.Schema != nil && !isObject(*ap.Schema) {
		if inner := constraints(*ap.Schema); len(inner) > 0 {
			out = append(out, "each value: "+strings.Join(inner, ", "))
		}
	}
	return out
}

func bounds(s apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	if len(s.Enum) > 0 {
		var values []string
		for _, e := range s.Enum {
			values = append(values, jsonValue(e.Raw))
		}
		out = append(out, "one of "+strings.Join(values, ", "))
	}
	if s.Minimum != nil {
		out = append(out, limit("minimum", "greater than", *s.Minimum, s.ExclusiveMinimum))
	}
	if s.Maximum != nil {
		out = append(out, limit("maximum", "less than", *s.Maximum, s.ExclusiveMaximum))
	}
	if s.MultipleOf != nil {
		out = append(out, "a multiple of "+number(*s.MultipleOf))
	}
	out = appendCount(out, s.MinLength, s.MaxLength, "character")
	if s.Pattern != "" {
		out = append(out, "matches "+code(s.Pattern))
	}
	out = appendCount(out, s.MinItems, s.MaxItems, "item")
	if s.UniqueItems {
		out = append(out, "items unique")
	}
	return appendCount(out, s.MinProperties, s.MaxProperties, "entry")
}

func limit(inclusive, exclusive string, v float64, strict bool) string {
	if strict {
		return exclusive + " " + number(v)
	}
	return inclusive + " " + number(v)
}

func appendCount(out []string, lo, hi *int64, unit string) []string {
	plural := func(n int64) string {
		if n == 1 {
			return fmt.Sprintf("%d %s", n, unit)
		}
		if unit == "entry" {
			return fmt.Sprintf("%d entries", n)
		}
		return fmt.Sprintf("%d %ss", n, unit)
	}
	switch {
	case lo != nil && hi != nil && *lo == *hi:
		return append(out, "exactly "+plural(*hi))
	case lo != nil && hi != nil:
		return append(out, fmt.Sprintf("%d to %s", *lo, plural(*hi)))
	case lo != nil:
		return append(out, "at least "+plural(*lo))
	case hi != nil:
		return append(out, "at most "+plural(*hi))
	}
	return out
}

// inner is the schema of an array's items or a map's values when they are not an object
// level of their own, so that their rules are shown with the field.
type inner struct {
	suffix string
	schema apiextensionsv1.JSONSchemaProps
}

func scalarContainers(s apiextensionsv1.JSONSchemaProps) []inner {
	var out []inner
	if s.Type == "array" && s.Items != nil && s.Items.Schema != nil && !isObject(*s.Items.Schema) && len(s.Items.Schema.XValidations) > 0 {
		out = append(out, inner{"[]", *s.Items.Schema})
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil && !isObject(*ap.Schema) && len(ap.Schema.XValidations) > 0 {
		out = append(out, inner{"{}", *ap.Schema})
	}
	return out
}
