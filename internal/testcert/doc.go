// Package testcert makes a CA and certificates it signs: for tests of TLS against real
// processes, and for the local cluster's own (the API server's front proxy). The certificates
// are real, only made on the spot.
package testcert
