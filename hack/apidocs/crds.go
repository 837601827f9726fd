package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// loadCRDs reads every CustomResourceDefinition in dir (one per *.yaml file, as controller-gen
// writes them), ordered by kind so that the page does not depend on file names.
func loadCRDs(dir string) ([]apiextensionsv1.CustomResourceDefinition, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no CRD (*.yaml) in %s", dir)
	}
	var crds []apiextensionsv1.CustomResourceDefinition
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if crd.Kind != "CustomResourceDefinition" || crd.Spec.Names.Kind == "" {
			return nil, fmt.Errorf("%s: not a CustomResourceDefinition", path)
		}
		crds = append(crds, crd)
	}
	slices.SortFunc(crds, func(a, b apiextensionsv1.CustomResourceDefinition) int {
		return strings.Compare(a.Spec.Names.Kind, b.Spec.Names.Kind)
	})
	return crds, nil
}
