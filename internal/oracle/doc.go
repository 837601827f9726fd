// Package oracle holds the tests' independent judges of data: what a test compares against to
// decide that data survived, read with a client of the test's own rather than through the code
// under test.
package oracle
