package hibernate

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// NewHibernateCmd is the hibernate verb.
func NewHibernateCmd(flags *kube.Flags) *cobra.Command {
	return &cobra.Command{
		Use:   "hibernate NAME",
		Short: "Stop every pod of a cluster, keeping its data on the claims",
		Long: `Set spec.hibernate: the operator closes client writes, waits until every replica holds
what its primary acknowledged, then scales every StatefulSet to zero with the claims (and the
auth Secret) kept. status.state becomes Hibernated. Only a Durable cluster can hibernate (a Cache
cluster keeps nothing across a stop, and the API server refuses it). Wake it with
kubectl valkey wake NAME.`,
		Example:           `  kubectl valkey hibernate cache`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: flags.CompleteClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			return setHibernate(cmd, flags, args[0], true)
		},
	}
}

// NewWakeCmd is the wake verb.
func NewWakeCmd(flags *kube.Flags) *cobra.Command {
	return &cobra.Command{
		Use:   "wake NAME",
		Short: "Start a hibernated cluster again on the data it kept",
		Long: `Clear spec.hibernate: the pods start on their claims, and once every one answers the
operator bootstraps each shard from the node whose data contains every other's, as for a cluster
applied again on kept claims. status.state goes Bootstrapping, then Steady.`,
		Example:           `  kubectl valkey wake cache`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: flags.CompleteClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			return setHibernate(cmd, flags, args[0], false)
		},
	}
}

func setHibernate(cmd *cobra.Command, flags *kube.Flags, name string, on bool) error {
	clients, err := flags.NewClients()
	if err != nil {
		return err
	}
	// false is written out rather than removed: a merge patch of null would do the same, but
	// an explicit false reads better in kubectl get -o yaml and in GitOps diffs.
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"hibernate": on}})
	if err != nil {
		return err
	}
	if _, err := kube.ClusterResource(clients.Dynamic, clients.Namespace).Patch(cmd.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return kube.NotFoundHint(err, clients.Namespace, name)
	}
	what := "hibernation of %s requested: writes close, replicas catch up, then every pod stops (the claims stay)"
	if !on {
		what = "wake of %s requested: the pods start on their claims and the cluster bootstraps on its data"
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), what+"; follow it with: kubectl valkey history %s --watch\n", name, name)
	return err
}
