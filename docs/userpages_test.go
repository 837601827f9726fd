package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// userPages are the pages users read: the README, docs/ (not docs/development/, which is for
// those who work on the operator) and the charts' READMEs.
func userPages(t *testing.T) []string {
	t.Helper()
	var pages []string
	for _, pattern := range []string{"../README.md", "*.md", "../charts/*/README.md"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, m...)
	}
	if len(pages) < 10 {
		t.Fatalf("found only %d user pages: %v", len(pages), pages)
	}
	return pages
}

// notForUsers are what a page for users must not say: references to the project's own issues
// and commits, and the words of how it is developed. A user cannot follow "#33" or "449d04d"
// from a page of a release, and "session" or "helper" describe the making, not the product.
// An upstream reference names its repository (valkey-io/valkey#774) and is not caught.
var notForUsers = []struct {
	what string
	re   *regexp.Regexp
}{
	{"an issue reference", regexp.MustCompile(`(?:^|[\s(\[,;])#[0-9]+\b[^-\w]`)},
	{"an issue reference", regexp.MustCompile(`(?i)\b(?:issue|PR|pull request)\s*#?[0-9]+\b`)},
	{"a commit id", regexp.MustCompile(`(?:^|[^\w:/.\-])(?:[0-9a-f]*[a-f][0-9a-f]*[0-9][0-9a-f]*|[0-9a-f]*[0-9][0-9a-f]*[a-f][0-9a-f]*)(?:[^\w\-]|$)`)},
	// Singular "session" only: "sessions" is the examples' cluster (one that stores sessions).
	{"a development-process word", regexp.MustCompile(`(?i)(?:^|[^\w/\-])(?:helpers?|worktrees?|session|(?:helper|parallel|other|seven|six) sessions)(?:[^\w\-]|$)`)},
}

// sessionOfACommand is where "session" is the product's own word: a valkey-cli session on a
// terminal (kubectl valkey cli).
var sessionOfACommand = regexp.MustCompile("(?i)valkey-cli|terminal|interactive|kubectl valkey cli|`cli`|the session's input")

// TestUserPagesSayNothingOfHowTheyAreMade fails on an issue number, a commit id or a word of
// the development process in a user page, naming the page, the line and what it found.
func TestUserPagesSayNothingOfHowTheyAreMade(t *testing.T) {
	for _, page := range userPages(t) {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		lines := strings.Split(string(raw), "\n")
		for i, line := range lines {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
			}
			// A sentence wraps: the words around a match are on the lines beside it too.
			around := strings.Join(lines[max(0, i-1):min(len(lines), i+2)], " ")
			for _, rule := range notForUsers {
				if rule.what == "a commit id" && fenced {
					// A command's output shows what the product prints: the version's commit,
					// digests, run ids.
					continue
				}
				for _, loc := range rule.re.FindAllStringIndex(line, -1) {
					hit := strings.TrimSpace(line[loc[0]:loc[1]])
					if rule.what == "a commit id" && !isCommitLike(hit) {
						continue
					}
					if rule.what == "a development-process word" && strings.HasPrefix(strings.ToLower(strings.Trim(hit, " .,;:()`*")), "session") &&
						(sessionOfACommand.MatchString(window(line, loc, 120)) || sessionOfACommand.MatchString(around)) {
						continue
					}
					t.Errorf("%s:%d: %s (%q) in a page for users: %s", filepath.Clean(page), i+1, rule.what, hit, strings.TrimSpace(line))
				}
			}
		}
	}
}

// isCommitLike is a run of 7 to 40 hex digits with letters and digits both, as git abbreviates
// commit ids; longer runs are digests (sha256), shorter ones words and numbers.
func isCommitLike(s string) bool {
	s = strings.Trim(s, " \t.,;:()[]`*'\"")
	if len(s) < 7 || len(s) > 40 {
		return false
	}
	return regexp.MustCompile(`^[0-9a-f]+$`).MatchString(s)
}

// window is the text around a match, for the context of a word.
func window(line string, loc []int, n int) string {
	return line[max(0, loc[0]-n):min(len(line), loc[1]+n)]
}

// TestTheReadmeIsShort: what, why, install, the two commands and links; the rest is in docs/.
func TestTheReadmeIsShort(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n > 150 {
		t.Errorf("README.md has %d lines, at most 150: move the details to a page of docs/ and link it", n)
	}
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	htmlID    = regexp.MustCompile(`<a id="([^"]+)"`)
	codeSpan  = regexp.MustCompile("`[^`]*`")
	notInSlug = regexp.MustCompile(`[^\p{L}\p{N}\s_-]`)
)

// TestEveryLinkBetweenPagesResolves: every relative link of the README and docs/ names a file
// that exists and, with #fragment, a heading (GitHub's anchor of it) or an <a id> of that page.
func TestEveryLinkBetweenPagesResolves(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	dev, _ := filepath.Glob("development/*.md")
	charts, _ := filepath.Glob("../charts/*/README.md")
	pages = append(append(append(pages, dev...), charts...), "../README.md")
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := map[string]bool{}
		raw, err := os.ReadFile(path)
		if err == nil {
			fenced := false
			for _, line := range strings.Split(string(raw), "\n") {
				if strings.HasPrefix(line, "```") {
					fenced = !fenced
				}
				for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
					a[m[1]] = true
				}
				if fenced || !strings.HasPrefix(line, "#") {
					continue
				}
				slug := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
				slug = strings.ReplaceAll(notInSlug.ReplaceAllString(slug, ""), " ", "-")
				for i, s := 1, slug; ; i++ {
					if !a[s] {
						a[s] = true
						break
					}
					s = slug + "-" + strconv.Itoa(i)
				}
			}
		}
		anchors[path] = a
		return a
	}
	for _, page := range pages {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		for i, line := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
			}
			if fenced {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), file)
				}
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s:%d: link to %s: no such file", page, i+1, target)
					continue
				}
				if frag != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[frag] {
					t.Errorf("%s:%d: link to %s: no heading or anchor %q in %s", page, i+1, target, frag, path)
				}
			}
		}
	}
}

// measuredFigure is how a measured figure reads: a ratio (1.19×), a percentile with a value
// (p99 158 ms, 4.98 s p50), a rate (137k events/s, 57.1 MB/s, 64,000 keys/s), memory per
// cluster.
var measuredFigure = regexp.MustCompile(`\b\d+(?:\.\d+)?×|\bp(?:50|99)\b[^|;]{0,12}\d|\d+(?:\.\d+)? ?(?:ms|s) p(?:50|99)|\d(?:\.\d+)? MiB per cluster|\d[\d,.]*k? (?:events|keys)/s|\d+(?:\.\d+)? MB/s`)

// TestNoPageRestatesAFigure: measured figures come from one place, the table make generate
// renders into docs/measurements.md from docs/measurements.json; a page that states one by hand
// goes stale and contradicts it. Fenced blocks (a command's output) are not figures.
func TestNoPageRestatesAFigure(t *testing.T) {
	for _, page := range userPages(t) {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		if filepath.Base(page) == "measurements.md" {
			// The generated table is the source; the page around it states no figure.
			if i, j := strings.Index(text, "<!-- measurements:"), strings.Index(text, "<!-- /measurements -->"); i >= 0 && j > i {
				text = text[:i] + strings.Repeat("\n", strings.Count(text[i:j], "\n")) + text[j:]
			}
		}
		fenced := false
		for i, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
			}
			if fenced {
				continue
			}
			if m := measuredFigure.FindString(codeSpan.ReplaceAllString(line, "")); m != "" {
				t.Errorf("%s:%d: %q restates a measured figure: link its row of docs/measurements.md instead: %s", filepath.Clean(page), i+1, m, strings.TrimSpace(line))
			}
		}
	}
}
