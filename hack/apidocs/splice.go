package main

import (
	"errors"
	"strings"
)

// The generated section of the page sits between a line starting with beginMarker (the rest of
// that line is free text for the reader) and the line endMarker.
const (
	beginMarker = "<!-- BEGIN GENERATED: hack/apidocs"
	endMarker   = "<!-- END GENERATED -->"
)

// splice returns doc with the text between its marker lines replaced by section; the marker
// lines and everything outside them stay as they are.
func splice(doc, section string) (string, error) {
	begin := lineStarting(doc, beginMarker, 0)
	if begin < 0 {
		return "", errors.New("no line starting with " + beginMarker)
	}
	bodyStart := begin + strings.IndexByte(doc[begin:], '\n') + 1
	if bodyStart <= begin {
		return "", errors.New("nothing after the line " + beginMarker)
	}
	end := lineStarting(doc, endMarker, bodyStart)
	if end < 0 {
		return "", errors.New("no line " + endMarker + " after " + beginMarker)
	}
	if lineStarting(doc, beginMarker, bodyStart) >= 0 {
		return "", errors.New("more than one line starting with " + beginMarker)
	}
	return doc[:bodyStart] + section + doc[end:], nil
}

// lineStarting returns the offset of the first line at or after from that starts with prefix,
// or -1.
func lineStarting(doc, prefix string, from int) int {
	for i := from; i < len(doc); {
		if (i == 0 || doc[i-1] == '\n') && strings.HasPrefix(doc[i:], prefix) {
			return i
		}
		next := strings.IndexByte(doc[i:], '\n')
		if next < 0 {
			return -1
		}
		i += next + 1
	}
	return -1
}
