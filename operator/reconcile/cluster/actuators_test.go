package cluster

import (
	"context"
	"errors"
	"testing"

	"github.com/valkey-fsm/valkey-operator/internal/actionkinds"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// Every action kind the machine can decide has a row in the actuators' table: the kinds are
// read from the machine's source (each `func (T) Kind() string { return "kind" }`), so a kind
// added there without an actuator here fails this test rather than a cluster's turn.
func TestEveryActionKindHasAnActuator(t *testing.T) {
	list, err := actionkinds.FromSource("../../../machine")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, k := range list {
		kinds[k] = true
	}
	if len(kinds) < 20 {
		t.Fatalf("found only %d action kinds in the machine's source: %v", len(kinds), kinds)
	}
	for k := range kinds {
		if actuators[k] == nil {
			t.Errorf("action kind %q has no actuator", k)
		}
	}
	for k := range actuators {
		if !kinds[k] {
			t.Errorf("the table has a row for %q, which the machine does not decide", k)
		}
	}
}

// An action the table does not know is refused as not supported, not carried out some other
// way.
func TestAnUnknownActionIsNotSupported(t *testing.T) {
	err := (&Reconciler{}).do(context.Background(), nil, &world{}, unknownAction{})
	if !errors.Is(err, errNotSupported) {
		t.Fatalf("got %v, want errNotSupported", err)
	}
}

type unknownAction struct{ machine.Promote }

func (unknownAction) Kind() string { return "no-such-kind" }
