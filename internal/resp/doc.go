// Package resp is a bare RESP2 client for tests: one connection, one command (or one
// pipeline) at a time, each bounded by a deadline, no retries, no topology discovery. What a
// test then measures or checks is exactly the client behaviour it describes, and it can speak
// the parts of the protocol a client library hides (WAIT on the connection that wrote, or a
// replica's side of the replication handshake). It dials loopback addresses only: tests never
// reach anything else. In internal/ so that tests outside e2e/ can use it too.
package resp
