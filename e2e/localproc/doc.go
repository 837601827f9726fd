// Package localproc runs plain processes for tests (valkey-server, valkey-sentinel) on the
// loopback addresses a test owns: a free port, a directory, output kept beside it, SIGKILL
// when the test process dies, and a kill that waits until the process is gone.
package localproc
