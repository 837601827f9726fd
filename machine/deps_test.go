package machine

import (
	"os/exec"
	"strings"
	"testing"
)

// goList lists the non-standard packages pkgs depend on (with the tests' when test).
func goList(t *testing.T, test bool, pkgs ...string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	args := []string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}"}
	if test {
		args = append(args, "-test")
	}
	out, err := exec.Command(goBin, append(args, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// The machine is pure: the standard library, looplab/fsm and its election model, nothing
// else. Kubernetes or valkey-go creeping in would make decisions depend on the world they are
// about.
func TestMachineImportsOnlyStdlibAndLooplab(t *testing.T) {
	for _, dep := range goList(t, false, ".") {
		switch dep {
		case "github.com/valkey-fsm/valkey-operator/machine", "github.com/valkey-fsm/valkey-operator/machine/election", "github.com/looplab/fsm":
		default:
			t.Errorf("machine depends on %s", dep)
		}
	}
}

// The election model is the machine's algebra: the standard library only, never the machine
// (the machine imports it).
func TestElectionImportsOnlyStdlib(t *testing.T) {
	if deps := goList(t, false, "./election"); len(deps) != 1 || deps[0] != "github.com/valkey-fsm/valkey-operator/machine/election" {
		t.Errorf("machine/election depends on %v", deps)
	}
}

// The replay is as pure as the machine it replays (the plugin runs it too): the standard
// library, the machine and looplab/fsm.
func TestReplayIsPure(t *testing.T) {
	for _, dep := range goList(t, false, "./replay") {
		switch dep {
		case "github.com/valkey-fsm/valkey-operator/machine", "github.com/valkey-fsm/valkey-operator/machine/election", "github.com/valkey-fsm/valkey-operator/machine/replay", "github.com/looplab/fsm":
		default:
			t.Errorf("machine/replay depends on %s", dep)
		}
	}
}

// The simulator may add rapid (tests) but never Kubernetes or a Valkey client: the world is
// a model.
func TestSimImportsNoKubernetesNorValkeyClient(t *testing.T) {
	for _, dep := range goList(t, true, "./sim") {
		for _, banned := range []string{"k8s.io", "valkey-io", "valkey-go", "redis"} {
			if strings.Contains(dep, banned) {
				t.Errorf("machine/sim depends on %s", dep)
			}
		}
	}
}
