// Package timeline is how kubectl-valkey shows state transitions, the same way in `status`
// (the last few), `history` (status.history, followed with --watch) and `history --full`
// (the operator's journal): one aligned row per transition, and one line across the table
// for transitions that are known to exist but cannot be shown.
package timeline
