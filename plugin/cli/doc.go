// Package cli is the cli verb: an interactive valkey-cli session on one of a ValkeyCluster's
// nodes, run inside its pod through pods/exec and authenticated through the session's input
// (package nodecli), never through a command line.
package cli
