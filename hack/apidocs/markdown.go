package main

import (
	"regexp"
	"strings"
	"unicode"
)

// width is where prose is wrapped, indentation included, as the hand-written pages are.
const width = 100

// code returns s as one inline code span, with a fence longer than any run of backticks in s
// (CEL has none today, but a rule is the user's text to the generator).
func code(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// prose returns the paragraphs of a description or message as Markdown that shows the text as
// written: characters Markdown would take as emphasis, HTML (`<name>-tls`), links or table
// cells are escaped, text between backticks stays a code span.
func prose(s string) []string {
	var paragraphs []string
	for _, p := range regexp.MustCompile(`\n[ \t]*\n`).Split(strings.TrimSpace(s), -1) {
		if p = strings.Join(strings.Fields(p), " "); p != "" {
			paragraphs = append(paragraphs, escapeInline(p))
		}
	}
	return paragraphs
}

// escapeInline escapes one paragraph; a paragraph with an odd number of backticks has them
// escaped too rather than open a code span that swallows the rest.
func escapeInline(p string) string {
	if strings.Count(p, "`")%2 == 1 {
		return escapeText(p, true)
	}
	var b strings.Builder
	for i, part := range strings.Split(p, "`") {
		if i%2 == 1 {
			b.WriteString("`" + part + "`")
			continue
		}
		b.WriteString(escapeText(part, false))
	}
	return b.String()
}

func escapeText(s string, backticks bool) string {
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		switch c {
		case '\\', '*', '<', '>', '[', ']', '|':
			b.WriteRune('\\')
		case '`':
			if backticks {
				b.WriteRune('\\')
			}
		case '_':
			// GitHub takes no underscore inside a word for emphasis (master_repl_offset).
			if i == 0 || i == len(r)-1 || !isWord(r[i-1]) || !isWord(r[i+1]) {
				b.WriteRune('\\')
			}
		}
		b.WriteRune(c)
	}
	return b.String()
}

func isWord(c rune) bool { return unicode.IsLetter(c) || unicode.IsDigit(c) }

// blockStart matches a word that would turn the line it starts into something else than the
// paragraph's next line: a list item, a heading, a quote, a setext underline or a table row.
var blockStart = regexp.MustCompile(`^([-+*=#>|]+|\d+[.)])$`)

// wrap breaks text into lines of at most width runes, each prefixed by indent (the first by
// first), at spaces outside code spans; a word longer than a line stays whole.
func wrap(text, first, indent string) []string {
	var lines []string
	line := first
	empty := true
	for _, word := range words(text) {
		if !empty && len([]rune(line))+1+len([]rune(word)) > width {
			lines = append(lines, line)
			line, empty = indent, true
		}
		if empty && blockStart.MatchString(word) {
			word = `\` + word
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	return append(lines, line)
}

// words splits at spaces, except inside code spans: a line break there is harmless in
// Markdown, but keeping `key in (value)` whole reads better in the source.
func words(text string) []string {
	var out []string
	var cur strings.Builder
	inCode := false
	for i, c := range text {
		if c == '`' && (i == 0 || text[i-1] != '\\') {
			inCode = !inCode
		}
		if c == ' ' && !inCode {
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
			continue
		}
		cur.WriteRune(c)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// cell returns text for one cell of a Markdown table: one line, pipes escaped.
func cell(text string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(text), " "), "|", `\|`)
}

// anchor returns an id usable in a link (#id) from parts: lower case, words joined by '-'.
func anchor(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		for _, c := range strings.ToLower(p) {
			switch {
			case isWord(c):
				b.WriteRune(c)
			case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
				b.WriteRune('-')
			}
		}
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
			b.WriteRune('-')
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}
