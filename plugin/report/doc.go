// Package report is the report verb: one archive with what a support case about a
// ValkeyCluster needs (its object, history and journal, Events, pods and their logs, each
// node's INFO and configuration), every secret redacted, and a summary of what could not be
// collected. A part that fails is noted in the archive; it never fails the report.
package report
