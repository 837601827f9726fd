package version

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/valkey-fsm/valkey-operator/internal/version"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
)

// lookupTimeout bounds the search for the operator: a version command that hangs on an
// unreachable API server for kubectl's default 32 s would be worse than one that says so.
const lookupTimeout = 10 * time.Second

// NewCmd is the version verb.
func NewCmd(flags *kube.Flags) *cobra.Command {
	var clientOnly bool
	format := output.Text
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Show the plugin's version and the image of the operator in the cluster",
		Long: `Show the version and commit of kubectl-valkey and, when the cluster can be reached, the image
of each valkey-operator workload in it (a Deployment or StatefulSet labelled
app.kubernetes.io/name=valkey-operator, in any namespace). --client skips the cluster.
-o json or -o yaml prints the same as a structure: client (version, commit), operators (kind,
namespace, name, image) and operatorError when the cluster could not be asked.`,
		Example: `  kubectl valkey version
  kubectl valkey version --client
  kubectl valkey version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			w := cmd.OutOrStdout()
			if format != output.Text {
				v := View{Client: Client{Version: version.Version, Commit: version.Commit}}
				if !clientOnly {
					ctx, cancel := context.WithTimeout(cmd.Context(), lookupTimeout)
					defer cancel()
					v.Operators, err = FindOperators(ctx, flags)
					if err != nil {
						v.OperatorError = err.Error()
					} else if v.Operators == nil {
						v.Operators = []Operator{}
					}
				}
				return output.Encode(w, v, format)
			}
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
	output.AddFlag(cmd.Flags(), &format)
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

// View is what version -o json or -o yaml prints.
type View struct {
	Client Client `json:"client"`
	// Operators are the operator's workloads found; absent with --client, empty when none
	// was found.
	Operators []Operator `json:"operators,omitzero"`
	// OperatorError is why the cluster could not be asked (not an error of the command).
	OperatorError string `json:"operatorError,omitempty"`
}

// Client is the plugin's own version, as the build stamped it.
type Client struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
}
