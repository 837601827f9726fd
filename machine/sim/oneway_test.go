package sim

import (
	"strings"
	"testing"
)

// One-way partitions around the primary (a firewall rule on one side, an asymmetric route).
//
//   - Its messages are lost (-x>): replicas hear nothing from it, the operator cannot survey
//     it; what the replicas send still arrives, so it keeps counting them for
//     min-replicas-to-write until they detach (their connection's close reaches it). The
//     operator fails over; no WAIT-acknowledged write is lost.
//   - Messages to it are lost (<x-): the replicas still hear it, so they confirm it is alive
//     and no failover starts; it gets no acknowledgements, so it refuses writes by itself once
//     they are maxLag old. Writes stop until the partition heals; none is lost.
func TestOneWayPartitionsAroundThePrimaryLoseNoAcknowledgedWrite(t *testing.T) {
	for _, c := range []struct {
		fault    string
		failover bool
	}{
		{"fault: partition-one-way {primary-of-s0,client} -x> rest", true},
		{"fault: partition-one-way {primary-of-s0,client} <x- rest", false},
	} {
		t.Run(c.fault[len("fault: "):], func(t *testing.T) {
			lines := []string{"# topology: replication"}
			for i := 0; i < 12; i++ {
				lines = append(lines, "operator")
			}
			lines = append(lines, "write+WAIT key 1 (from ordinal 0)", c.fault)
			for i := 0; i < 40; i++ {
				lines = append(lines, "operator", "write+WAIT key 2 (from ordinal 0)")
			}
			res := runSchedule(t, strings.NewReader(strings.Join(lines, "\n")))
			trace := strings.Join(res.Trace, "\n")
			if len(res.Violations) > 0 {
				t.Fatalf("%v\n%s", res.Violations, trace)
			}
			failedOver := strings.Contains(trace, "--candidate-elected-->")
			if failedOver != c.failover {
				t.Fatalf("failover %v, want %v:\n%s", failedOver, c.failover, trace)
			}
		})
	}
}
