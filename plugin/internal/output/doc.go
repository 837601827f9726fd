// Package output is how every verb of kubectl-valkey prints: the -o formats (text, json,
// yaml), aligned tables and ages as kubectl shows them. It holds no Kubernetes or Valkey
// knowledge, so that each verb's formatter is a pure function of its input and a clock and
// can be checked against golden files.
package output
