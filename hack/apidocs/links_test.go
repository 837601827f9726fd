package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestLinksIntoTheAPIPageResolve: every link to an anchor of docs/api.md, from the other pages,
// the charts and the page itself, names a heading or a generated anchor of it. The reference's
// anchors follow the CRDs' kinds, versions and fields, so a version no longer served or a
// renamed field would otherwise leave links that silently land at the top of the page.
func TestLinksIntoTheAPIPageResolve(t *testing.T) {
	root := filepath.Join("..", "..")
	page, err := os.ReadFile(filepath.Join(root, "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := pageAnchors(string(page))
	if !anchors["reference"] || !anchors["valkeycluster-v1alpha1-spec"] {
		t.Fatalf("the anchors found are not the page's: %v", len(anchors))
	}
	var files []string
	for _, pattern := range []string{"*.md", "docs/*.md", "charts/*/*.md", "charts/*/values.yaml", "charts/*/values.schema.json", "hack/*/*.go"} {
		matches, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, matches...)
	}
	into := regexp.MustCompile(`api\.md#([^)\s"'.,;]+)`)
	self := regexp.MustCompile(`\]\(#([^)\s]+)\)`)
	checked := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var links [][]string
		links = append(links, into.FindAllStringSubmatch(string(data), -1)...)
		if filepath.Base(file) == "api.md" && filepath.Base(filepath.Dir(file)) == "docs" {
			links = append(links, self.FindAllStringSubmatch(string(data), -1)...)
		}
		for _, l := range links {
			checked++
			if !anchors[l[1]] {
				t.Errorf("%s links to docs/api.md#%s, which is no anchor of the page", file, l[1])
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d links checked: the search misses them", checked)
	}
}

// pageAnchors returns the anchors GitHub gives a Markdown page: one per heading outside code
// blocks (its text lower-cased, punctuation dropped, spaces as '-', a repeated one numbered
// -1, -2...), and the ids of <a id="..."> elements.
func pageAnchors(page string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(page, "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		if m := regexp.MustCompile(`^#{1,6} (.*)$`).FindStringSubmatch(line); m != nil {
			slug := headingSlug(m[1])
			if n := seen[slug]; n > 0 {
				anchors[slug+"-"+strconv.Itoa(n)] = true
			} else {
				anchors[slug] = true
			}
			seen[slug]++
		}
		for _, m := range regexp.MustCompile(`<a id="([^"]+)"></a>`).FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
	}
	return anchors
}

func headingSlug(text string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case unicode.IsLetter(c) || unicode.IsDigit(c) || c == '-' || c == '_':
			b.WriteRune(c)
		case c == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}
