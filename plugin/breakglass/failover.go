package breakglass

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// NewFailoverCmd is the force-failover verb.
func NewFailoverCmd(flags *kube.Flags) *cobra.Command {
	var without []string
	var yes, dryRun bool
	cmd := &cobra.Command{
		Use:   "force-failover NAME --without POD[,POD...]",
		Short: "Fail over without pods that may hold acknowledged writes (break glass)",
		Long: `Let a failover go on without the named pods. When the primary is lost together with replicas
(a node that held both), the replicas left may lack writes acknowledged with WAIT that only the
lost ones have, and the operator waits for them (status.waiting says so, naming them). Naming
them is the decision that those writes are given up: the failover goes on with the nodes that
answer, the history records it, and the named pods, when they come back, full-sync from the new
primary. A pod a failover deposed that came back from its append-only file with more keys than
the node to be elected is named the same way (status.waiting names it): nothing tells whether
its extra keys are acknowledged writes it synced or writes the shard gave up when it was
deposed, and naming it gives them up. The operator removes the annotation when the failover
completes, or when every pod it names answers again and none is such a deposed pod, so it never
applies to a later failover.

The verb shows the cluster's state, what it waits for and the pods given up, then asks you to
type the cluster's name; --yes goes on without asking, and without a terminal nothing is written
unless --yes is given. --dry-run only shows. It writes the annotation
` + v1beta1.AnnotationFailoverWithout + `. For a planned switchover, which loses nothing, use
kubectl valkey failover.`,
		Example: `  kubectl valkey force-failover cache --without cache-0
  kubectl valkey force-failover cache --without cache-0,cache-2 --yes`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: flags.CompleteClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			var names []string
			for _, n := range without {
				if n = strings.TrimSpace(n); n != "" && !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
			if len(names) == 0 {
				return fmt.Errorf("--without POD[,POD...] names the pods the failover goes on without")
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
			known, err := knownPods(ctx, clients, vc)
			if err != nil {
				return err
			}
			if err := checkPods(vc, known, names); err != nil {
				return err
			}
			if len(names) == len(known) {
				return fmt.Errorf("--without names every pod of %s/%s: no node would be left to fail over to; nothing was changed", vc.Namespace, vc.Name)
			}
			value := strings.Join(names, ",")
			return confirmAndAnnotate(cmd, clients, vc, failoverPlan(vc, names), dryRun, yes,
				v1beta1.AnnotationFailoverWithout, value, fmt.Sprintf("failover of %s without %s", vc.Name, value))
		},
	}
	fs := cmd.Flags()
	fs.StringSliceVar(&without, "without", nil, "the pods to fail over without, giving up writes only they hold (comma-separated or repeated; required)")
	fs.BoolVar(&yes, "yes", false, "go on without asking (needed without a terminal)")
	fs.BoolVar(&dryRun, "dry-run", false, "show what would happen, change nothing")
	return cmd
}

// failoverPlan says what naming pods does: which writes are given up.
func failoverPlan(vc *v1beta1.ValkeyCluster, names []string) *strings.Builder {
	b := &strings.Builder{}
	value := strings.Join(names, ",")
	fmt.Fprintf(b, "Fail over %s/%s without %s (annotation %s=%s)\n\n", vc.Namespace, vc.Name, strings.Join(names, ", "), v1beta1.AnnotationFailoverWithout, value)
	writeFacts(b, vc, v1beta1.AnnotationFailoverWithout, vc.Annotations[v1beta1.AnnotationFailoverWithout])
	var given []v1beta1.NodeStatus
	for _, n := range vc.Status.Nodes {
		if slices.Contains(names, n.Pod) {
			given = append(given, n)
		}
	}
	b.WriteString("\nWrites acknowledged with WAIT that only these pods hold are LOST; as last surveyed:\n")
	writeNodes(b, given)
	b.WriteString("The failover goes on with the nodes that answer; the pods named full-sync from the new\nprimary when they come back. The operator removes the annotation once the failover completes,\nor once every pod named answers again.\n")
	if !strings.Contains(vc.Status.Waiting, v1beta1.AnnotationFailoverWithout) {
		b.WriteString("Note: status.waiting does not say that a failover waits for unseen pods. The annotation then\nstays until every pod named answers again, and a failover meanwhile goes on without them.\n")
	}
	b.WriteString("\n")
	return b
}
