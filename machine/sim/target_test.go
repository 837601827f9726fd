package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/internal/actionkinds"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// Every action aimed at one process is refused for another process of the node, by the one
// check on its Target: a kind of the machine is either aimed (a sample here) or named as
// aimed at no single process, so a new kind is placed on one side or the other.
func TestEveryAimedActionIsRefusedForAnotherProcess(t *testing.T) {
	notAimed := map[string]string{
		"ensure-objects":     "the owned objects",
		"expand-volumes":     "volumes, not processes",
		"roll-pod":           "a pod, whichever process it runs",
		"hand-over":          "two processes, each checked by the hand-over",
		"migrate-slots":      "two processes, each checked by the migration",
		"forget-node":        "a node that is no pod",
		"publish-passwords":  "the auth Secret",
		"add-passwords":      "checks the rotation before the process",
		"switch-master-auth": "checks the rotation before the process",
		"retire-passwords":   "checks the rotation before the process",
		"sentinel-monitor":   "a sentinel, checked by its id (conformance.SentinelTable)",
		"sentinel-remove":    "a sentinel, checked by its id (conformance.SentinelTable)",
		"sentinel-reset":     "a sentinel, checked by its id (conformance.SentinelTable)",
		"roll-sentinel":      "a sentinel's pod, checked by its id when it answered (conformance.SentinelTable)",
		"sentinel-hand-over": "a sentinel and two processes, each checked (conformance.SentinelTable)",
	}
	aimed := func(to machine.Target) []machine.Action {
		return []machine.Action{
			machine.Promote{Target: to}, machine.Detach{Target: to}, machine.Seal{Target: to}, machine.Unseal{Target: to},
			machine.Fence{Target: to}, machine.CloseWrites{Target: to}, machine.OpenWrites{Target: to},
			machine.ReplicaOf{Target: to, PrimaryIP: "127.0.0.1"}, machine.AssignSlots{Target: to},
			machine.TakeSlotsOver{Target: to}, machine.AddNode{Target: to}, machine.RemoveNode{Target: to},
			machine.RestoreSnapshot{Target: to}, machine.ReloadCertificate{Target: to}, machine.HoldBack{Target: to},
		}
	}
	kinds, err := actionkinds.FromSource("..")
	if err != nil {
		t.Fatal(err)
	}
	samples := map[string]bool{}
	w, p, r1, _ := bareWorld(t)
	wire(w, p, r1)
	before := r1.runID
	w.restart(r1, true)
	w.tick += startTicks
	for _, a := range aimed(machine.Target{Node: r1.name, RunID: before}) {
		samples[a.Kind()] = true
		if _, ok := a.(machine.Aimed); !ok {
			t.Errorf("%s is not aimed", a.Kind())
			continue
		}
		role, fenced := r1.role, r1.writesFenced
		if err := w.Apply(context.Background(), a); err == nil || !strings.Contains(err.Error(), "action was for "+before) {
			t.Errorf("%s for the previous process: %v, want it refused", a.Kind(), err)
		}
		if r1.role != role || r1.writesFenced != fenced {
			t.Errorf("%s for the previous process changed the node", a.Kind())
		}
	}
	for _, k := range kinds {
		if _, skip := notAimed[k]; !skip && !samples[k] {
			t.Errorf("action kind %s: neither aimed here nor named as aimed at no single process", k)
		}
	}
}
