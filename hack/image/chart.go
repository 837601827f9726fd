package main

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// operatorChart is the chart whose default image this builds.
const operatorChart = "charts/valkey-operator"

// chartImage is the image the operator chart's defaults pull, as its template
// (valkey-operator.image in _helpers.tpl) writes it: image.repository, then image.tag or the
// chart's appVersion.
func chartImage(root string) (repository, tag string, err error) {
	var values struct {
		Image struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
		} `json:"image"`
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	for file, into := range map[string]any{"values.yaml": &values, "Chart.yaml": &chart} {
		data, err := os.ReadFile(filepath.Join(root, operatorChart, file))
		if err != nil {
			return "", "", err
		}
		if err := yaml.Unmarshal(data, into); err != nil {
			return "", "", fmt.Errorf("%s/%s: %w", operatorChart, file, err)
		}
	}
	tag = values.Image.Tag
	if tag == "" {
		tag = chart.AppVersion
	}
	if values.Image.Repository == "" || tag == "" {
		return "", "", fmt.Errorf("%s names no image repository and tag (values.yaml image.repository, appVersion)", operatorChart)
	}
	return values.Image.Repository, tag, nil
}
