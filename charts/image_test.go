package charts

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestTheChartPullsTheImageMakeImageBuilds: the image the operator chart's defaults run (as
// helm renders it, through the template's own defaulting) is the reference `make image` tags
// and pushes by default, so that `helm install` pulls exactly what was built. A change to
// values.yaml, Chart.yaml's appVersion, the template or hack/image that parts them fails here.
func TestTheChartPullsTheImageMakeImageBuilds(t *testing.T) {
	cmd := exec.Command("go", "run", "./hack/image", "-print-ref")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "IMAGE=") // the chart's default, not a reference set for a push
	ref, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run ./hack/image -print-ref: %v", err)
	}
	out, err := render(t, "valkey-operator")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var images []string
	for _, o := range objects(t, out) {
		if o.Kind != "StatefulSet" && o.Kind != "Deployment" {
			continue
		}
		var w struct {
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Name  string `json:"name"`
							Image string `json:"image"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(o.raw, &w); err != nil {
			t.Fatal(err)
		}
		for _, c := range w.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
		}
	}
	if len(images) != 1 || images[0] != strings.TrimSpace(string(ref)) {
		t.Fatalf("the chart runs %q, make image builds %s", images, ref)
	}
}
