// Command apidocs writes the reference part of docs/api.md from the CRDs controller-gen writes
// (charts/valkey-operator/files/crds): for each kind and each served version, every field with its
// type, default, bounds and description, the CEL rules where they apply, and the printer
// columns. `make generate` runs it after controller-gen and `make verify-generate` fails when
// docs/api.md differs from what it writes, so the reference cannot drift from the API.
//
// Only the text between the marker lines
//
//	<!-- BEGIN GENERATED: hack/apidocs ... -->
//	<!-- END GENERATED -->
//
// is rewritten; the rest of the page (concepts, examples, guidance) is written by hand.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	crds := flag.String("crds", "charts/valkey-operator/files/crds", "the directory of the CRD YAML files")
	doc := flag.String("doc", "docs/api.md", "the page whose generated section is rewritten in place")
	flag.Parse()
	if err := run(*crds, *doc); err != nil {
		fmt.Fprintln(os.Stderr, "apidocs:", err)
		os.Exit(1)
	}
}

func run(crdDir, docPath string) error {
	crds, err := loadCRDs(crdDir)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(docPath)
	if err != nil {
		return err
	}
	doc, err := splice(string(old), render(crds))
	if err != nil {
		return fmt.Errorf("%s: %w", docPath, err)
	}
	if doc == string(old) {
		return nil
	}
	return os.WriteFile(docPath, []byte(doc), 0o644)
}
