package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The plugin depends on the API and the machine only (docs/design: plugin -> apis, machine;
// machine/sim and machine/replay are the machine's):
// never on the operator, the actuators or e2e, nor on what they bring (controller-runtime,
// bbolt, valkey-go). Tests may use more; the binary may not.
func TestPluginDependsOnAPIAndMachineOnly(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const module = "github.com/valkey-fsm/valkey-operator/"
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list found only %v", deps)
	}
	for _, dep := range deps {
		if rest, ok := strings.CutPrefix(dep, module); ok {
			// internal/version is two strings the build stamps (kubectl valkey version);
			// machine/replay is the machine's replay (history --replay, replay), machine/sim
			// its simulated world (simulate) and machine/election its election model, pure
			// like it. The actuator contract's table
			// (machine/conformance) is test code: the simulator's side of it is a test file.
			if !strings.HasPrefix(rest, "apis/") && rest != "machine" && rest != "machine/replay" && rest != "machine/sim" && rest != "machine/election" && rest != "internal/version" && !strings.HasPrefix(rest, "plugin") {
				t.Errorf("the plugin depends on %s", dep)
			}
			continue
		}
		// The API's versions name controller-runtime's conversion interfaces (Hub,
		// Convertible) in their method signatures: that package alone, two interfaces over
		// apimachinery's runtime.Object, comes with them.
		if dep == "sigs.k8s.io/controller-runtime/pkg/conversion" {
			continue
		}
		for _, banned := range []string{"sigs.k8s.io/controller-runtime", "go.etcd.io/bbolt", "github.com/valkey-io/"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("the plugin depends on %s", dep)
			}
		}
	}
}
