package report

import (
	"encoding/base64"
	"regexp"
	"slices"
	"strings"
)

// redacted replaces what a report must not carry.
const redacted = "[REDACTED]"

// minSecretLength is the shortest Secret value replaced wherever it appears: shorter ones
// (a "true", a port) would redact ordinary text, and are no passwords the operator makes.
const minSecretLength = 6

// Patterns of secrets whatever their value: they also catch what is in no Secret the plugin
// could read (a password set by hand, an old one).
var (
	// A private key in PEM, of any algorithm.
	privateKey = regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?-----END [A-Z0-9 ]*PRIVATE KEY-----`)
	// An ACL password hash as users' files and ACL rules write it (#<sha256> adds, !<sha256>
	// removes): a hash of a short password is as good as the password to a dictionary.
	aclHash = regexp.MustCompile(`([#!])[0-9a-fA-F]{64}\b`)
	// Directives whose value is a password, in valkey.conf form ("masterauth x"), as CONFIG
	// GET is written in the report and as logs quote them.
	directive = regexp.MustCompile(`(?im)^(\s*(?:requirepass|masterauth|tls-key-file-pass|tls-client-key-file-pass)[ \t]+)\S.*$`)
)

// redactor removes secrets from every file of a report.
type redactor struct {
	values *strings.Replacer
}

// newRedactor replaces each of values (and its base64 forms) wherever it appears, longest
// first so that a secret containing another is replaced whole.
func newRedactor(values []string) *redactor {
	var all []string
	for _, v := range values {
		if len(v) < minSecretLength {
			continue
		}
		all = append(all, v, base64.StdEncoding.EncodeToString([]byte(v)), base64.RawStdEncoding.EncodeToString([]byte(v)))
	}
	slices.SortFunc(all, func(a, b string) int { return len(b) - len(a) })
	all = slices.Compact(all)
	pairs := make([]string, 0, 2*len(all))
	for _, v := range all {
		pairs = append(pairs, v, redacted)
	}
	return &redactor{values: strings.NewReplacer(pairs...)}
}

// redact returns b without secrets.
func (r *redactor) redact(b []byte) []byte {
	s := r.values.Replace(string(b))
	s = privateKey.ReplaceAllString(s, "[REDACTED PRIVATE KEY]")
	s = aclHash.ReplaceAllString(s, "${1}"+redacted)
	s = directive.ReplaceAllString(s, "${1}"+redacted)
	return []byte(s)
}
