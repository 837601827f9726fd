package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/nodecli"
)

// NewCmd is the cli verb.
func NewCmd(flags *kube.Flags) *cobra.Command {
	var (
		replica bool
		shard   int32
		pod     string
		user    string
	)
	cmd := &cobra.Command{
		Use:   "cli NAME [-- VALKEY-CLI-ARGS...]",
		Short: "Open a valkey-cli session on a ValkeyCluster's primary or a replica",
		Long: `Open a valkey-cli session on a node of the cluster: the primary the operator recorded in
status (shard 0's in a Cluster topology, or --shard's; valkey-cli then follows MOVED and ASK
redirections, -c), the most caught-up ready replica with --replica, or --pod. Arguments after
-- go to valkey-cli: a command runs once, options change the session.

valkey-cli runs inside the pod (kubectl exec; it needs create on pods/exec), over TLS when the
pod serves it, with the pod's own certificate. It authenticates as the application user
(default: every command but the administrative ones, so a slip in a session cannot move a
role or a fence behind the operator's back), or as the operator's user with --valkey-user
operator (INFO, CONFIG GET/SET, ROLE, CLUSTER NODES ...; what the operator may do, and what its
machine expects nobody else does: read, do not change). The password is read from the
cluster's auth Secret (it needs get on secrets/NAME-auth) and written into the session's
input, where valkey-cli --askpass reads it: it is on no command line (neither this one, nor
valkey-cli's in the pod, which every process of the node can read in /proc), in no shell
history and in no pod spec. The pod's own REDISCLI_AUTH is not used: a kubelet sets it when
the container starts, so after a password rotation it no longer works.

With a terminal on stdin the session runs on a terminal in the pod (line editing, history,
hints); with piped input valkey-cli reads commands from it.`,
		Example: `  kubectl valkey cli cache
  kubectl valkey cli cache --replica -- INFO replication
  kubectl valkey cli sessions --shard 2
  echo 'DBSIZE' | kubectl valkey cli cache`,
		Args: func(cmd *cobra.Command, args []string) error {
			if n := cmd.ArgsLenAtDash(); n > 1 || (n < 0 && len(args) != 1) || len(args) == 0 {
				return fmt.Errorf("cli takes one NAME, then valkey-cli's arguments after --")
			}
			return nil
		},
		ValidArgsFunction: flags.CompleteClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := flags.OldValkeyUserFlag(kube.UserClient, kube.UserOperator, "replication"); err != nil {
				return err
			}
			clients, err := flags.NewClients()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			vc, err := kube.GetTypedCluster(ctx, clients.Dynamic, clients.Namespace, args[0])
			if err != nil {
				return err
			}
			key := kube.KeyClientPassword
			switch user {
			case kube.UserClient:
			case kube.UserOperator:
				key = kube.KeyOperatorPassword
			default:
				return fmt.Errorf("--valkey-user %s: the session is the application's user (%s) or the operator's (%s); a ValkeyACL user's password is yours, connect as that user with your own client", user, kube.UserClient, kube.UserOperator)
			}
			name := pod
			if name == "" {
				if name, err = choosePod(vc, replica, shard); err != nil {
					return err
				}
			}
			target, err := nodecli.TargetOf(ctx, clients.Core, clients.Namespace, vc.Name, name)
			if err != nil {
				return err
			}
			password, err := nodecli.Password(ctx, clients.Core, clients.Namespace, vc.Name, key)
			if err != nil {
				return err
			}
			var extra []string
			if vc.Spec.Topology == v1beta1.TopologyCluster {
				extra = append(extra, "-c")
			}
			if n := cmd.ArgsLenAtDash(); n >= 0 {
				extra = append(extra, args[n:]...)
			}
			// The application user without a password (spec.auth.enabled=false) is valkey-cli's
			// default: no --user, nothing to ask.
			cliUser := user
			if password == "" && user == kube.UserClient {
				cliUser = ""
			}
			argv := nodecli.Args(target, cliUser, password != "", extra...)
			return session(ctx, cmd, clients, target.Pod, argv, password)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&replica, "replica", false, "Connect to a replica (the most caught-up ready one) instead of the primary")
	fs.Int32Var(&shard, "shard", 0, "The shard whose primary (or replica) to connect to (topology Cluster)")
	fs.StringVar(&pod, "pod", "", "Connect to this pod of the cluster instead")
	fs.StringVar(&user, kube.ValkeyUserFlag, kube.UserClient, "The Valkey user to authenticate as: default (the application's) or operator")
	return cmd
}

// session runs valkey-cli in the pod, on a terminal when stdin is one.
func session(ctx context.Context, cmd *cobra.Command, clients *kube.Clients, pod string, argv []string, password string) error {
	ex := nodecli.Exec{Config: clients.Config, Core: clients.Core}
	streams := nodecli.Streams{Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()}
	if t := terminalOf(cmd.InOrStdin(), cmd.OutOrStdout()); t != nil {
		if err := t.makeRaw(); err != nil {
			return err
		}
		defer t.restore()
		sizeCtx, stop := context.WithCancel(ctx)
		defer stop()
		streams.TTY, streams.Resize = true, t.sizes(sizeCtx)
	}
	return ex.Run(ctx, clients.Namespace, pod, argv, password, streams)
}
