// Package valkeyapi prepares a local cluster for the suites that run the operator against it
// (e2e/operatorsuite, e2e/chaos): the ValkeyCluster CRD from the chart, installed and served,
// and a typed client that knows the operator's types.
package valkeyapi
