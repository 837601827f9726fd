package failover

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// NewCmd is the failover verb.
func NewCmd(flags *kube.Flags) *cobra.Command {
	to := ""
	cmd := &cobra.Command{
		Use:   "failover NAME",
		Short: "Ask for a planned, zero-loss switchover of the primary role",
		Long: `Ask the operator to hand the primary role over to a caught-up replica: writes pause
until the target has every write, then it becomes the primary and the old primary follows it.
Without --to the operator picks the most caught-up replica. The request is an annotation on
the ValkeyCluster (` + v1beta1.AnnotationSwitchoverTo + `); follow it with kubectl valkey history NAME --watch.`,
		Example: `  kubectl valkey failover cache
  kubectl valkey failover cache --to cache-2`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: flags.CompleteClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			clients, err := flags.NewClients()
			if err != nil {
				return err
			}
			target := to
			if target == "" {
				target = v1beta1.SwitchoverAuto
			}
			if err := kube.Annotate(cmd.Context(), clients.Dynamic, clients.Namespace, args[0], v1beta1.AnnotationSwitchoverTo, target); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "switchover of %s to %s requested; follow it with: kubectl valkey history %s --watch\n", args[0], target, args[0])
			return err
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the pod to hand the primary role to (default: the most caught-up replica)")
	return cmd
}
