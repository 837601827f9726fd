package rotate

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// NewCmd is the rotate verb. now makes each request unique.
func NewCmd(flags *kube.Flags, now func() time.Time) *cobra.Command {
	var users []string
	var retire bool
	cmd := &cobra.Command{
		Use:   "rotate NAME [--valkey-user USER]... [--retire]",
		Short: "Rotate passwords without a restart, or retire the old ones now",
		Long: `Ask the operator to replace passwords it manages without restarting a node: the new
password is added to every node beside the old one, published in the auth Secret (which
clients read) only once every node accepts it, replicas switch to it, and the old one is
removed after spec.auth.rotationGracePeriod (10m by default). Each step is in
kubectl valkey history NAME.

Users: default (the application's; not when spec.auth.existingSecret names the password:
change it there), operator, replication, or all (the default). A ValkeyACL user's password
is rotated by listing a second Secret in its passwordSecrets, then removing the first.

--retire ends the grace period of the rotation in progress: the old passwords are removed
at once (say so only when every client uses the new one).

The request is an annotation on the ValkeyCluster (` + v1beta1.AnnotationRotatePasswords + `,
or ` + v1beta1.AnnotationRetireOldPasswords + ` with --retire).`,
		Example: `  kubectl valkey rotate cache
  kubectl valkey rotate cache --valkey-user default
  kubectl valkey rotate cache --retire`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: flags.CompleteClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := flags.OldValkeyUserFlag("default", "operator", "replication", "all"); err != nil {
				return err
			}
			clients, err := flags.NewClients()
			if err != nil {
				return err
			}
			at := now().UTC().Format(time.RFC3339)
			name := args[0]
			if retire {
				if len(users) > 0 {
					return fmt.Errorf("--retire takes no --valkey-user: it ends the grace period of the rotation in progress")
				}
				if err := kube.Annotate(cmd.Context(), clients.Dynamic, clients.Namespace, name, v1beta1.AnnotationRetireOldPasswords, at); err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "retiring the old passwords of %s's rotation in progress requested; follow it with: kubectl valkey history %s --watch\n", name, name)
				return err
			}
			list := "all"
			if len(users) > 0 {
				for _, u := range users {
					switch u {
					case "default", "operator", "replication", "all":
					default:
						return fmt.Errorf("--valkey-user %s: the operator manages the passwords of default, operator and replication (or all); a ValkeyACL user's is rotated with a second Secret in its passwordSecrets", u)
					}
				}
				list = strings.Join(users, ",")
			}
			value := list + "@" + at
			if err := kube.Annotate(cmd.Context(), clients.Dynamic, clients.Namespace, name, v1beta1.AnnotationRotatePasswords, value); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "password rotation of %s (%s) requested; follow it with: kubectl valkey history %s --watch\n", name, list, name)
			return err
		},
	}
	cmd.Flags().StringSliceVar(&users, kube.ValkeyUserFlag, nil, "a user whose password to rotate: default, operator, replication or all (repeatable; default all)")
	cmd.Flags().BoolVar(&retire, "retire", false, "end the grace period of the rotation in progress: remove the old passwords now")
	return cmd
}
