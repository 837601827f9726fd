package simulate

import (
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/valkey-fsm/valkey-operator/machine/sim"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/exitcode"
)

// NewCmd is the simulate verb. Its flags are the simulator's own (Go flag syntax, -h lists
// them), passed through unparsed; it needs no cluster.
//
// A simulation's live heap is small and it allocates fast, so Go's default GOGC (100) collects
// every few milliseconds: a fifth of its CPU in a profile. Unless GOGC says otherwise, the verb
// lets the heap grow four times its live size between collections (tens of MB).
func NewCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "simulate [flags]",
		Short: "Run random fault schedules against the state machine in a simulated world",
		Long: `Run random fault schedules against the operator's state machine in a simulated world of Valkey
nodes and Kubernetes, and check the safety and liveness properties; on a violation print the
shrunk schedule and its history (exit 1). No cluster is needed. kubectl valkey simulate -h lists
the flags.`,
		Example: `  kubectl valkey simulate -topology replication -schedules 1000 -steps 100
  kubectl valkey simulate -schedule failing.sched
  kubectl valkey simulate -from-journal journal.json -schedules 200`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if os.Getenv("GOGC") == "" {
				debug.SetGCPercent(400)
			}
			return exitcode.Of(sim.Main(args, cmd.OutOrStdout(), cmd.ErrOrStderr()))
		},
	}
}
