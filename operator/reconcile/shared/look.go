package shared

import (
	"time"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// Look is what a cluster's last turn observed and decided. The cluster controller keeps it (in
// memory only); the others read the nodes from it instead of surveying them a second time (a
// backup chooses its sources by it).
type Look struct {
	Obs       machine.Observation
	Next      machine.Persisted
	Passwords valkey.Passwords
	// At is when the turn looked (zero: never, since this process started).
	At time.Time
}
