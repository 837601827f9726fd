package history

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
)

// NewCmd is the history verb. now is the clock ages are computed against.
func NewCmd(flags *kube.Flags, now func() time.Time) *cobra.Command {
	var (
		opts   = Options{Format: output.Text, Now: now}
		watch  bool
		full   bool
		replay bool
		ro     ReplayOptions
	)
	cmd := &cobra.Command{
		Use:   "history NAME",
		Short: "Show a ValkeyCluster's state transitions",
		Long: `Show a ValkeyCluster's state transitions, oldest first: sequence number, time, states
before and after, the event that caused it and what happened.

By default the transitions come from status.history, which keeps the most recent ones.
--watch keeps printing transitions as the operator records them, until interrupted.
--full reads the operator's journal, which keeps every transition, through the API server
(the operator serves it as the aggregated API journal.valkey.fsm.dev): it needs get on
journals.journal.valkey.fsm.dev in the cluster's namespace (the chart's ClusterRole
valkey-operator-journal-reader, bound with a RoleBinding).
--replay reads the journal as --full does (or an exported one, --from-file) and feeds it back
through the operator's state machine: every recorded decision is taken again on the state the
journal says was current and compared with the record (a determinism check; the command fails
when one differs). With --set KEY=VALUE (detectionProbes, fenceTimeout, minSyncReplicas,
rotationGrace, fsyncAlways) the machine runs on its own decisions with the recorded
observations as the world, and the report shows which decisions would have differed and when.`,
		Example: `  kubectl valkey history cache
  kubectl valkey history cache --watch --age
  kubectl valkey history cache --full -o json
  kubectl valkey history cache --replay
  kubectl valkey history cache --replay --set detectionProbes=5 --set fenceTimeout=10s
  kubectl valkey history cache --replay --from-file journal.json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: flags.CompleteClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if watch && full {
				return errors.New("--watch and --full cannot be combined: --watch follows status.history, --full reads the journal once")
			}
			if !replay && (len(ro.Sets) > 0 || ro.FromFile != "" || ro.Every) {
				return errors.New("--set, --from-file and --every-step are for --replay")
			}
			if replay && (watch || full) {
				return errors.New("--replay reads the journal itself: it cannot be combined with --watch or --full")
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if replay {
				return runReplay(cmd.Context(), flags, name, ro, opts.Format, out)
			}
			if full {
				return runFull(cmd.Context(), flags, name, out, opts)
			}
			clients, err := flags.NewClients()
			if err != nil {
				return err
			}
			if watch {
				res := kube.ClusterResource(clients.Dynamic, clients.Namespace)
				return Watch(cmd.Context(), res, clients.Namespace, name, newPrinter(out, errOut, opts, true))
			}
			u, err := kube.GetCluster(cmd.Context(), clients.Dynamic, clients.Namespace, name)
			if err != nil {
				return err
			}
			vc, err := kube.Typed(u)
			if err != nil {
				return err
			}
			return Print(out, vc, opts)
		},
	}
	fs := cmd.Flags()
	output.AddFlag(fs, &opts.Format)
	fs.BoolVar(&opts.Age, "age", false, "Show how long ago each transition was instead of its RFC 3339 time")
	fs.BoolVarP(&watch, "watch", "w", false, "After the current transitions, print new ones as the operator records them, until interrupted")
	fs.BoolVar(&full, "full", false, "Read every transition from the operator's journal instead of status.history")
	fs.BoolVar(&replay, "replay", false, "Replay the operator's journal through the state machine and show, step by step, whether it decides the same")
	fs.StringArrayVar(&ro.Sets, "set", nil, "With --replay: a changed setting KEY=VALUE for a what-if (detectionProbes, fenceTimeout, minSyncReplicas, rotationGrace, fsyncAlways); repeatable")
	fs.StringVar(&ro.FromFile, "from-file", "", "With --replay: replay an exported journal (kubectl get --raw of the journal API, pages appended, or history --full -o json; - for standard input)")
	fs.BoolVar(&ro.Every, "every-step", false, "With --replay: print every decision, not runs of unchanged observations folded into one line")
	return cmd
}
