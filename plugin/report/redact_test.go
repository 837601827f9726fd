package report

import (
	"encoding/base64"
	"strings"
	"testing"
)

// Each kind of secret a report can meet is removed, and the text around it is kept.
func TestRedact(t *testing.T) {
	const password = "s3cr3t-Pa55word"
	hash := strings.Repeat("ab12", 16)
	in := strings.Join([]string{
		"client connected with " + password,
		"env: " + base64.StdEncoding.EncodeToString([]byte(password)),
		"masterauth " + "replica-pass-not-in-any-secret",
		"requirepass  x y",
		"requirepass ",
		"user default on #" + hash + " ~* +@all",
		"ACL SETUSER default !" + hash,
		"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC PRIVATE KEY-----",
		"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
		"run_id:" + hash[:40] + " short:abc",
	}, "\n")
	got := string(newRedactor([]string{password, "abc"}).redact([]byte(in)))
	want := strings.Join([]string{
		"client connected with [REDACTED]",
		"env: [REDACTED]",
		"masterauth [REDACTED]",
		"requirepass  [REDACTED]",
		"requirepass ",
		"user default on #[REDACTED] ~* +@all",
		"ACL SETUSER default ![REDACTED]",
		"[REDACTED PRIVATE KEY]",
		"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
		// A run id is no secret, and a value too short to be a password is left alone.
		"run_id:" + hash[:40] + " short:abc",
	}, "\n")
	if got != want {
		t.Errorf("redacted:\n%s\nwant:\n%s", got, want)
	}
}
