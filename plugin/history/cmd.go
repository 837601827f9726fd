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
		op    = OperatorOptions{Namespace: DefaultOperatorNamespace, Port: DefaultOperatorPort}
	)
	cmd := &cobra.Command{
		Use:   "history NAME",
		Short: "Show a ValkeyCluster's state transitions",
		Long: `Show a ValkeyCluster's state transitions, oldest first: sequence number, time, states
before and after, the event that caused it and what happened.

By default the transitions come from status.history, which keeps the most recent ones.
--watch keeps printing transitions as the operator records them, until interrupted.
--full asks the operator for its journal, which keeps every transition; the operator is
found at --operator-url, or by dialling the Ready pods labelled
app.kubernetes.io/name=valkey-operator in --operator-namespace on --operator-port, the
leader's first.`,
		Example: `  kubectl valkey history cache
  kubectl valkey history cache --watch --age
  kubectl valkey history cache --full -o json
  kubectl port-forward -n valkey-operator-system pod/OPERATOR-POD 8082 &
  kubectl valkey history cache --full --operator-url http://127.0.0.1:8082`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if watch && full {
				return errors.New("--watch and --full cannot be combined: --watch follows status.history, --full reads the journal once")
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if full {
				return runFull(cmd.Context(), flags, op, name, out, opts)
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
	fs.StringVar(&op.URL, "operator-url", "", "Base URL of the operator's journal endpoint (for example http://127.0.0.1:8082 through kubectl port-forward); by default the operator's Ready pods are dialled directly, the leader's first")
	fs.StringVar(&op.Namespace, "operator-namespace", op.Namespace, "Namespace of the operator's pods, for --full without --operator-url")
	fs.IntVar(&op.Port, "operator-port", op.Port, "Port of the operator's journal endpoint on its pods, for --full without --operator-url")
	return cmd
}
