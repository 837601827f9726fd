// Package operatorsuite runs the operator against the local cluster: real API server,
// controllers and scheduler, pods that are real valkey-server processes. Most tests run the
// operator in the test process (fast to start, stop and "kill"); the chart test runs it as a
// Pod under the chart's RBAC.
package operatorsuite
