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
		opts  = Options{Format: output.Text, Now: now}
		watch bool
		full  bool
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
valkey-operator-journal-reader, bound with a RoleBinding).`,
		Example: `  kubectl valkey history cache
  kubectl valkey history cache --watch --age
  kubectl valkey history cache --full -o json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: flags.CompleteClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if watch && full {
				return errors.New("--watch and --full cannot be combined: --watch follows status.history, --full reads the journal once")
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
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
	fs.VarP(&opts.Format, "output", "o", "Output format: text, json or yaml")
	fs.BoolVar(&opts.Age, "age", false, "Show how long ago each transition was instead of its RFC 3339 time")
	fs.BoolVarP(&watch, "watch", "w", false, "After the current transitions, print new ones as the operator records them, until interrupted")
	fs.BoolVar(&full, "full", false, "Read every transition from the operator's journal instead of status.history")
	return cmd
}
