package reshard

import (
	"fmt"
	"io"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// writeState says what the operator does about the plan now: resharding (with its progress),
// about to, or waiting (and why).
func writeState(w io.Writer, vc *v1beta1.ValkeyCluster, name string, plan Plan) error {
	st := vc.Status
	var err error
	switch {
	case st.State == v1beta1.StateResharding:
		_, err = fmt.Fprintf(w, "\nResharding now: %s\n", orDash(st.Progress))
	case len(plan.Moves) > 0 || len(st.Shards) != plan.To:
		_, err = fmt.Fprintf(w, "\nThe operator reshards once every shard is healthy (state %s); follow it with: kubectl valkey history %s --watch\n", orDash(string(st.State)), name)
	}
	if err == nil && st.Waiting != "" {
		_, err = fmt.Fprintf(w, "Waiting: %s\n", st.Waiting)
	}
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
