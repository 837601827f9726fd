package docs

import (
	"os"
	"path/filepath"
	"regexp"
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
var sessionOfACommand = regexp.MustCompile(`(?i)valkey-cli|terminal|interactive|kubectl valkey cli|the session's input`)

// TestUserPagesSayNothingOfHowTheyAreMade fails on an issue number, a commit id or a word of
// the development process in a user page, naming the page, the line and what it found.
func TestUserPagesSayNothingOfHowTheyAreMade(t *testing.T) {
	for _, page := range userPages(t) {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		for i, line := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
			}
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
						sessionOfACommand.MatchString(window(line, loc, 120)) {
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
