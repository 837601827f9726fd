// Package confirm asks a person at a terminal to confirm an operation that gives up data, by
// typing the name of what it changes, as the break-glass verbs need: a script must say --yes,
// and without a terminal nobody can be asked, so the operation is refused.
package confirm
