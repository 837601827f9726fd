package status

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
)

// NewCmd is the status verb. now is the clock ages are computed against.
func NewCmd(flags *kube.Flags, now func() time.Time) *cobra.Command {
	format := output.Text
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Show a ValkeyCluster's state, nodes, conditions and last transitions",
		Long: `Show a ValkeyCluster's state machine state, topology, profile and image, how many pods
are ready, the recognised primary, what each node reported at the last survey, the conditions
and the last transitions. -o json or -o yaml prints the whole status instead.`,
		Example: `  kubectl valkey status cache
  kubectl valkey status cache -n prod -o yaml`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: flags.CompleteClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			clients, err := flags.NewClients()
			if err != nil {
				return err
			}
			u, err := kube.GetCluster(cmd.Context(), clients.Dynamic, clients.Namespace, args[0])
			if err != nil {
				return err
			}
			return Print(cmd.OutOrStdout(), u, format, now)
		},
	}
	output.AddFlag(cmd.Flags(), &format)
	return cmd
}
