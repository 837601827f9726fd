package valkey

import (
	"bufio"
	"strconv"
	"strings"
)

// parseInfo turns an INFO reply into a field map (section headers and blank lines dropped).
func parseInfo(s string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
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
		if _, err := strconv.Atoi(strings.TrimPrefix(k, "db")); err != nil || !strings.HasPrefix(k, "db") {
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
