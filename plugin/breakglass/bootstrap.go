package breakglass

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// NewBootstrapCmd is the force-bootstrap verb.
func NewBootstrapCmd(flags *kube.Flags) *cobra.Command {
	var from string
	var yes, dryRun bool
	cmd := &cobra.Command{
		Use:   "force-bootstrap NAME --from POD",
		Short: "Bootstrap a shard from one pod's data, discarding the other nodes' (break glass)",
		Long: `Name the pod whose data a bootstrap starts from, when the operator cannot choose safely on its
own and waits (status.waiting says so): the nodes of a cluster applied again on kept claims hold
forked data, or a pod whose claim is older than the cluster never answers. Every other node of
that pod's shard then full-syncs from it: their data is DISCARDED. The history records the
choice and what was discarded.

The verb shows the cluster's state, what it waits for and the nodes whose data is discarded,
then asks you to type the cluster's name; --yes goes on without asking, and without a terminal
nothing is written unless --yes is given. --dry-run only shows. It writes the annotation
` + v1beta1.AnnotationBootstrapFrom + `, which the operator reads only while the cluster bootstraps: on a
cluster in another state the verb refuses (left there, it would decide a later bootstrap, a
wake or a re-creation, that nobody has looked at).`,
		Example: `  kubectl valkey force-bootstrap cache --from cache-1
  kubectl valkey force-bootstrap cache --from cache-1 --yes`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: flags.CompleteClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" {
				return fmt.Errorf("--from POD names the pod whose data the shard starts from")
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
			if s := vc.Status.State; s != "" && s != v1beta1.StateBootstrapping {
				return fmt.Errorf("%s/%s is %s: the operator reads %s only while a cluster bootstraps, and left on the cluster it would decide a later bootstrap nobody has looked at; nothing was changed", vc.Namespace, vc.Name, s, v1beta1.AnnotationBootstrapFrom)
			}
			known, err := knownPods(ctx, clients, vc)
			if err != nil {
				return err
			}
			if err := checkPods(vc, known, []string{from}); err != nil {
				return err
			}
			return confirmAndAnnotate(cmd, clients, vc, bootstrapPlan(vc, from), dryRun, yes,
				v1beta1.AnnotationBootstrapFrom, from, fmt.Sprintf("bootstrap of %s from %s", vc.Name, from))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&from, "from", "", "the pod whose data the shard starts from (required)")
	fs.BoolVar(&yes, "yes", false, "go on without asking (needed without a terminal)")
	fs.BoolVar(&dryRun, "dry-run", false, "show what would happen, change nothing")
	return cmd
}

// bootstrapPlan says what naming from does: whose data is kept and whose is discarded.
func bootstrapPlan(vc *v1beta1.ValkeyCluster, from string) *strings.Builder {
	b := &strings.Builder{}
	fmt.Fprintf(b, "Bootstrap %s/%s from %s (annotation %s=%s)\n\n", vc.Namespace, vc.Name, from, v1beta1.AnnotationBootstrapFrom, from)
	writeFacts(b, vc, v1beta1.AnnotationBootstrapFrom, vc.Annotations[v1beta1.AnnotationBootstrapFrom])
	shard, surveyed := int32(0), false
	for _, n := range vc.Status.Nodes {
		if n.Pod == from {
			shard, surveyed = n.Shard, true
		}
	}
	// A pod no survey saw has no shard in status; outside a Cluster topology every node is
	// shard 0's.
	known := surveyed || vc.Spec.Topology != v1beta1.TopologyCluster
	where := fmt.Sprintf("shard %d", shard)
	if !known {
		where = "its shard"
	}
	var discarded []v1beta1.NodeStatus
	for _, n := range vc.Status.Nodes {
		if known && n.Pod != from && n.Shard == shard {
			discarded = append(discarded, n)
		}
	}
	fmt.Fprintf(b, "\n%s's data becomes %s's. Every other node of %s full-syncs from it, and its own\ndata is DISCARDED; as last surveyed:\n", from, where, where)
	writeNodes(b, discarded)
	b.WriteString("A node of the shard that status does not list (a pod that never answered) is discarded too.\nThe history records the choice and what was discarded.\n\n")
	return b
}
