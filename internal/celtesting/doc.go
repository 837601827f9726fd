// Package celtesting holds what the API versions' CEL test suites share: a namespace of a
// test's own, an object built from the YAML a user would write, and the checks that the API
// server refused it with the expected message. Each suite brings its own API server.
package celtesting
