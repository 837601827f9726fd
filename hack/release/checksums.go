package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// writeChecksums writes out/checksums.txt: the sha256 of every file, by its path under out,
// in the format `sha256sum -c checksums.txt` reads in out.
func writeChecksums(out string, files []string) (string, error) {
	var lines []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		rel, err := filepath.Rel(out, f)
		if err != nil || strings.HasPrefix(rel, "..") {
			return "", fmt.Errorf("%s is not in the release directory %s", f, out)
		}
		lines = append(lines, sha256Hex(data)+"  "+filepath.ToSlash(rel)+"\n")
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i][66:] < lines[j][66:] })
	path := filepath.Join(out, "checksums.txt")
	return path, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644)
}
