// Package testcert makes a CA and certificates it signs, for tests of TLS against real
// processes (a fake is not needed: the certificates are real, only made on the spot).
package testcert
