// Package rotate is the rotate verb of kubectl valkey: it asks the operator for a password
// rotation without a restart, or to retire the old passwords of the one in progress.
package rotate
