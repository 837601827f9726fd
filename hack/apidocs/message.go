package main

import (
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// message is what a refused request says, for the reader: the fixed message; or a computed
// one shown as its text with … where the expression fills in a value
// ('storage.size cannot shrink from ' + string(oldSelf) + ...); or, when neither says
// anything, that the rule failed.
func message(r apiextensionsv1.ValidationRule) string {
	if r.MessageExpression != "" {
		if text, ok := messageTemplate(r.MessageExpression); ok {
			return text
		}
		return "computed by " + code(r.MessageExpression)
	}
	if r.Message != "" {
		return strings.Join(prose(r.Message), " ")
	}
	return "failed rule: " + code(r.Rule)
}

// messageTemplate reads a CEL concatenation of string literals and other terms; it returns
// the literals' text (escaped for Markdown) with … for each other term, and false when the
// expression is not such a sum or holds no literal.
func messageTemplate(expr string) (string, bool) {
	var b strings.Builder
	literal := false
	for _, term := range topLevelTerms(expr) {
		term = strings.TrimSpace(term)
		if text, ok := stringLiteral(term); ok {
			b.WriteString(escapeText(text, true))
			literal = true
			continue
		}
		if term == "" {
			return "", false
		}
		b.WriteString("…")
	}
	return b.String(), literal
}

// topLevelTerms splits expr at the + signs outside string literals and brackets.
func topLevelTerms(expr string) []string {
	var terms []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		switch {
		case quote != 0 && c == '\\':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == '+' && depth == 0:
			terms = append(terms, expr[start:i])
			start = i + 1
		}
	}
	return append(terms, expr[start:])
}

// stringLiteral returns the text of a single- or double-quoted CEL string without escapes
// (the messages are plain sentences); anything else is not a literal here.
func stringLiteral(term string) (string, bool) {
	if len(term) < 2 || (term[0] != '\'' && term[0] != '"') || term[len(term)-1] != term[0] {
		return "", false
	}
	body := term[1 : len(term)-1]
	if strings.ContainsAny(body, `\`+term[:1]) {
		return "", false
	}
	return body, true
}
