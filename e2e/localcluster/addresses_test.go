package localcluster

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fixedAddress is a loopback address written into the source: 127.A.B followed by a dot, or
// 127.A. followed by a verb or the string's end (the third octet computed: a claim on all of
// 127.A), or a /16 range 127.A.0.0/16.
var fixedAddress = regexp.MustCompile(`"127\.(\d+)\.(?:(\d+)\.|%|")(0/16)?`)

// TestFixedLoopbackAddressesDoNotCollide guards the loopback plan that lets test packages run
// in parallel (go test runs packages at once): a test that listens on a fixed address must own
// its /24 (or its /16, where it computes the third octet or names the /16 as a range), shared
// with no other package, and stay out of the ranges local clusters claim
// (their Pods' 127.100+n.0.0/16 and Services' 127.200+n.0.0/16, n below maxSlots). 127.0.0.x
// is everybody's, with ports the kernel picks. A collision shows only as a rare "address in
// use" when two packages' tests happen to run at once; this finds it in the source.
func TestFixedLoopbackAddressesDoNotCollide(t *testing.T) {
	root := filepath.Join("..", "..")
	owners := map[string][]string{} // "A.B" -> packages
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pkg, _ := filepath.Rel(root, filepath.Dir(path))
		for _, m := range fixedAddress.FindAllStringSubmatch(string(data), -1) {
			a, _ := strconv.Atoi(m[1])
			if a == 0 {
				continue
			}
			if (a >= 100 && a < 100+maxSlots) || (a >= 200 && a < 200+maxSlots) {
				// The local cluster's own code names its ranges; no other package may.
				if pkg != "e2e/localcluster" && !strings.HasPrefix(pkg, "e2e/localcluster/") {
					t.Errorf("%s: 127.%s.%s.x lies in the local clusters' ranges (127.100-%d and 127.200-%d)", path, m[1], m[2], 99+maxSlots, 199+maxSlots)
				}
				continue
			}
			key := m[1] + "." + m[2]
			if m[2] == "" || m[3] != "" {
				key = m[1] + ".*"
			}
			if !slices.Contains(owners[key], pkg) {
				owners[key] = append(owners[key], pkg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(owners) == 0 {
		t.Fatal("no fixed loopback address found: the scan looks in the wrong place")
	}
	for key, pkgs := range owners {
		if len(pkgs) > 1 {
			t.Errorf("127.%s.x is used by several packages, which may run at once: %v", key, pkgs)
		}
		// A package that computes the third octet or names the /16 may use any /24 in it.
		if a, whole := strings.CutSuffix(key, ".*"); whole {
			for other, users := range owners {
				if strings.HasPrefix(other, a+".") && other != key {
					for _, u := range users {
						if !slices.Contains(pkgs, u) || len(pkgs) > 1 {
							t.Errorf("127.%s.x (%v) lies in 127.%s.0.0/16, which %v claims whole", other, u, a, pkgs)
						}
					}
				}
			}
		}
	}
}
