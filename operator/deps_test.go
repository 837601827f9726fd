package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The operator binary carries what the operator runs and nothing a test or a tool needs: not
// the simulator (machine/sim, the plugin's simulate verb), not the actuator contract's table
// (machine/conformance), not e2e, and no testing package (a harness compiled into the
// operator is code that runs in production without being what production does).
func TestTheOperatorBinaryLinksNoSimulatorAndNoTestCode(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list found only %v", deps)
	}
	const module = "github.com/valkey-fsm/valkey-operator/"
	for _, dep := range deps {
		var why string
		switch {
		case dep == module+"machine/sim" || strings.HasPrefix(dep, module+"machine/sim/"):
			why = "the simulator"
		case dep == module+"machine/conformance":
			why = "the actuator contract's table"
		case strings.HasPrefix(dep, module+"e2e/"):
			why = "the end-to-end suites"
		case dep == "testing" || strings.HasPrefix(dep, "testing/") || dep == "net/http/httptest" ||
			strings.HasPrefix(dep, "pgregory.net/rapid") || strings.HasPrefix(dep, "github.com/stretchr/testify") ||
			strings.HasPrefix(dep, "sigs.k8s.io/controller-runtime/pkg/envtest"):
			why = "a testing package"
		default:
			continue
		}
		t.Errorf("the operator binary depends on %s (%s)", dep, why)
	}
}
