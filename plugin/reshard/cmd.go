package reshard

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
)

// NewCmd is the reshard verb.
func NewCmd(flags *kube.Flags) *cobra.Command {
	shards := 0
	dryRun := false
	format := output.Text
	cmd := &cobra.Command{
		Use:   "reshard NAME",
		Short: "Show the slot moves that balance a Cluster topology, or change its shard count",
		Long: `Show which hash slots move between which shards to balance the cluster over its
shards: the operator's own plan, from the slots each shard's primary serves (status). The
operator keeps the slots balanced on its own: a layout off balance (slots moved by hand, a
migration left open) is resharded as soon as every shard is healthy, and status.waiting says
what it waits for until then.

With --shards N the shard count (spec.shards) becomes N, which the operator carries out as a
resharding: new shards are created and slots move to them with their keys, or the slots of the
shards beyond N move away before those shards are deleted. --dry-run only shows that plan.
Follow it with kubectl valkey status NAME (progress) or kubectl valkey history NAME --watch.
-o json or -o yaml prints the plan and the operator's state as a structure instead.`,
		Example: `  kubectl valkey reshard sessions
  kubectl valkey reshard sessions --shards 5 --dry-run
  kubectl valkey reshard sessions --shards 5
  kubectl valkey reshard sessions -o json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: flags.CompleteClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			clients, err := flags.NewClients()
			if err != nil {
				return err
			}
			u, err := kube.GetCluster(cmd.Context(), clients.Dynamic, clients.Namespace, name)
			if err != nil {
				return err
			}
			vc, err := kube.Typed(u)
			if err != nil {
				return err
			}
			spec := vc.Spec.DeepCopy()
			v1beta1.SetDefaults(spec) // shards defaults by topology, in the operator
			if spec.Topology != v1beta1.TopologyCluster {
				return fmt.Errorf("%s/%s has topology %s: only topology Cluster has shards", clients.Namespace, name, spec.Topology)
			}
			target := int(spec.Shards)
			if dryRun && !cmd.Flags().Changed("shards") {
				return fmt.Errorf("--dry-run goes with --shards N: without it the verb changes nothing anyway")
			}
			change := cmd.Flags().Changed("shards") && shards != target
			if cmd.Flags().Changed("shards") {
				target = shards
			}
			if target < 1 {
				return fmt.Errorf("--shards %d: a Cluster topology has at least 1 shard", target)
			}
			plan, err := PlanFor(vc, target)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if format != output.Text {
				set := change && !dryRun
				if set {
					if err := setShards(cmd, clients, name, target); err != nil {
						return err
					}
				}
				return output.Encode(out, viewOf(vc, plan, set), format)
			}
			for _, sh := range vc.Status.Shards {
				if sh.Slots == "" {
					// Status lists a primary's slots only while it answers as one.
					if _, err := fmt.Fprintf(out, "Warning: shard %d's slots are unknown (its primary %s does not answer as one): the plan below counts them as unassigned.\n", sh.Index, sh.Primary); err != nil {
						return err
					}
				}
			}
			if err := plan.Write(out); err != nil {
				return err
			}
			switch {
			case change && dryRun:
				_, err = fmt.Fprintf(out, "\nDry run: spec.shards of %s stays %d.\n", name, spec.Shards)
				return err
			case change:
				if err := setShards(cmd, clients, name, target); err != nil {
					return err
				}
				_, err = fmt.Fprintf(out, "\nspec.shards of %s set to %d (was %d); follow it with: kubectl valkey history %s --watch\n", name, target, spec.Shards, name)
				return err
			}
			return writeState(out, vc, name, plan)
		},
	}
	cmd.Flags().IntVar(&shards, "shards", 0, "the shard count to reshard to (sets spec.shards)")
	output.AddFlag(cmd.Flags(), &format)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "with --shards: show the plan, change nothing")
	return cmd
}

// setShards changes spec.shards with a merge patch; the API server's rules (bounds, a shard
// count changing alone) answer with their own message.
func setShards(cmd *cobra.Command, clients *kube.Clients, name string, n int) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"shards": n}})
	if err != nil {
		return err
	}
	_, err = kube.ClusterResource(clients.Dynamic, clients.Namespace).Patch(cmd.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{})
	return kube.NotFoundHint(err, clients.Namespace, name)
}
