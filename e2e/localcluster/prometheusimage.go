package localcluster

import (
	"path/filepath"
	"sync"
)

// PrometheusImage is the repository of Prometheus's image: any tag maps to the Prometheus
// server built from the Go module proxy (hack/prometheus.sh, cached by version), so that the
// operator's metrics and the chart's alerting rules are checked by a real Prometheus that
// discovers its targets through the API server like any in-cluster Prometheus.
const PrometheusImage = "quay.io/prometheus/prometheus"

var prometheusBuild struct {
	once sync.Once
	path string
	err  error
}

// Prometheus returns the path of a Prometheus server binary every user can reach, building it
// the first time (several minutes; `make tools` does it ahead of the tests).
func Prometheus() (string, error) {
	prometheusBuild.once.Do(func() {
		var dir string
		dir, prometheusBuild.err = buildIntoProgramDir("prometheus.sh", "prometheus", filepath.Dir)
		prometheusBuild.path = filepath.Join(dir, "prometheus")
	})
	return prometheusBuild.path, prometheusBuild.err
}

// prometheusImage maps Prometheus's images (quay.io's and Docker Hub's names), or says why they
// cannot run here.
func prometheusImage(m map[string]Image) {
	img := Image{}
	if bin, err := Prometheus(); err != nil {
		img.Err = err
	} else {
		img = Image{Entrypoint: []string{bin}, Programs: map[string]string{"prometheus": bin, "/bin/prometheus": bin}}
	}
	m[PrometheusImage] = img
	m["prom/prometheus"] = img
	m["docker.io/prom/prometheus"] = img
}
