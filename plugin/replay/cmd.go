package replay

import (
	"github.com/spf13/cobra"

	"github.com/valkey-fsm/valkey-operator/machine/replay"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/exitcode"
)

// NewCmd is the replay verb. Its flags are machine/replay's own, passed through unparsed; it
// reads a journal from a file or standard input and needs no cluster.
func NewCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "replay [--set KEY=VALUE]... [--every-step] FILE|-",
		Short: "Feed a recorded journal back through the state machine",
		Long: `Feed a recorded journal back through the operator's state machine: every decision is taken again
on the state the journal says was current and compared with the record (exit 1 when one
differs). With --set the machine runs on its own decisions and the report shows which would
have differed and when. No cluster is needed. kubectl valkey replay -h lists the flags.`,
		Example: `  kubectl valkey history shop --full -o json > journal.json
  kubectl valkey replay journal.json
  kubectl valkey replay --set detectionProbes=5 journal.json`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return exitcode.Of(replay.Main(args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()))
		},
	}
}
