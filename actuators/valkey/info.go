package valkey

import (
	"strconv"
	"strings"

	vk "github.com/valkey-io/valkey-go"
)

// parseInfo turns an INFO reply into a field map (section headers and blank lines dropped).
// Lines have no length limit: a bufio.Scanner stopped silently at the first line over 64 KiB
// (a long module or error-statistics line can be), and every field after it was missing.
func parseInfo(s string) map[string]string {
	m := map[string]string{}
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}

// keyspaceKeys adds up the keys of every database in INFO keyspace ("db0:keys=3,expires=0,...").
func keyspaceKeys(m map[string]string) int64 {
	var n int64
	for k, v := range m {
		if !numbered(k, "db") {
			continue
		}
		for _, field := range strings.Split(v, ",") {
			if name, val, ok := strings.Cut(field, "="); ok && name == "keys" {
				keys, _ := strconv.ParseInt(val, 10, 64)
				n += keys
			}
		}
	}
	return n
}

// numbered reports whether an INFO field's name is prefix followed by a number (db0, slave1).
// It runs over every field of every survey: strconv.Atoi's error for the other names cost an
// allocation each, hundreds per survey, the largest part of the operator's garbage with many
// clusters (BenchmarkManyClusters' heap profile).
func numbered(k, prefix string) bool {
	rest, ok := strings.CutPrefix(k, prefix)
	if !ok || rest == "" {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if rest[i] < '0' || rest[i] > '9' {
			return false
		}
	}
	return true
}

func infoInt(m map[string]string, k string) int64 {
	v, _ := strconv.ParseInt(m[k], 10, 64)
	return v
}

// userIsOn reads the flags of an ACL GETUSER reply's "flags" list.
func userIsOn(flags []string) bool {
	for _, f := range flags {
		if f == "on" {
			return true
		}
	}
	return false
}

// fieldMap reads an answer of field, value pairs: a map under RESP3, a flat list of field,
// value, ... under RESP2.
func fieldMap(msg vk.ValkeyMessage) (map[string]string, error) {
	m, err := msg.AsStrMap()
	if err == nil {
		return m, nil
	}
	list, lerr := msg.AsStrSlice()
	if lerr != nil {
		return nil, err
	}
	m = map[string]string{}
	for i := 0; i+1 < len(list); i += 2 {
		m[list[i]] = list[i+1]
	}
	return m, nil
}
