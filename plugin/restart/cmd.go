package restart

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// NewCmd is the restart verb. now stamps the request.
func NewCmd(flags *kube.Flags, now func() time.Time) *cobra.Command {
	return &cobra.Command{
		Use:   "restart NAME",
		Short: "Ask for a rolling restart of every pod, without downtime",
		Long: `Ask the operator to restart every pod of the cluster: replicas one at a time (each
waits until it has caught up), then the primary role is handed over to a caught-up replica and
the old primary restarts last. The request is an annotation on the ValkeyCluster
(` + v1beta1.AnnotationRestartRequested + `); follow it with kubectl valkey history NAME --watch.`,
		Example:           `  kubectl valkey restart cache`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: flags.CompleteClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			clients, err := flags.NewClients()
			if err != nil {
				return err
			}
			at := now().UTC().Format(time.RFC3339)
			if err := kube.Annotate(cmd.Context(), clients.Dynamic, clients.Namespace, args[0], v1beta1.AnnotationRestartRequested, at); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "rolling restart of %s requested at %s; follow it with: kubectl valkey history %s --watch\n", args[0], at, args[0])
			return err
		},
	}
}
