package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
)

// crdsDir holds the CRDs as controller-gen writes them (make generate), one file per kind;
// the operator chart installs them from there.
const crdsDir = "charts/valkey-operator/files/crds"

// crdsFile is the release's one file of every CRD, for `kubectl apply --server-side -f` by
// those who install the CRDs apart from the chart (crds.enabled=false).
const crdsFile = "valkey-operator-crds.yaml"

// writeCRDs joins the CRD files, in name order, each as its own YAML document.
func writeCRDs(o options) (string, error) {
	files, err := filepath.Glob(filepath.Join(o.root, crdsDir, "*.yaml"))
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	var buf bytes.Buffer
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		data = bytes.TrimPrefix(bytes.TrimSpace(data), []byte("---\n"))
		buf.WriteString("---\n")
		buf.Write(data)
		buf.WriteString("\n")
	}
	path := filepath.Join(o.out, crdsFile)
	return path, os.WriteFile(path, buf.Bytes(), 0o644)
}
