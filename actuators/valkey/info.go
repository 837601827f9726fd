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
