package version

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/valkey-fsm/valkey-operator/internal/version"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// lookupTimeout bounds the search for the operator: a version command that hangs on an
// unreachable API server for kubectl's default 32 s would be worse than one that says so.
const lookupTimeout = 10 * time.Second

// NewCmd is the version verb.
func NewCmd(flags *kube.Flags) *cobra.Command {
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Show the plugin's version and the image of the operator in the cluster",
		Long: `Show the version and commit of kubectl-valkey and, when the cluster can be reached, the image
of each valkey-operator workload in it (a Deployment or StatefulSet labelled
app.kubernetes.io/name=valkey-operator, in any namespace). --client skips the cluster.`,
		Example: `  kubectl valkey version
  kubectl valkey version --client`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			if _, err := fmt.Fprintln(w, "kubectl-valkey", version.String()); err != nil {
				return err
			}
			if clientOnly {
				return nil
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), lookupTimeout)
			defer cancel()
			ops, err := FindOperators(ctx, flags)
			return PrintOperators(w, ops, err)
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print the plugin's version only, without asking the cluster")
	return cmd
}

// PrintOperators writes what FindOperators found, one line per workload.
func PrintOperators(w io.Writer, ops []Operator, err error) error {
	switch {
	case err != nil:
		_, werr := fmt.Fprintf(w, "operator: unknown (%v)\n", err)
		return werr
	case len(ops) == 0:
		_, werr := fmt.Fprintf(w, "operator: not found (no Deployment or StatefulSet labelled %s in any namespace)\n", selector)
		return werr
	}
	for _, op := range ops {
		if _, err := fmt.Fprintf(w, "operator: %s (%s %s/%s)\n", op.Image, op.Kind, op.Namespace, op.Name); err != nil {
			return err
		}
	}
	return nil
}
