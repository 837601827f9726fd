package breakglass

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/confirm"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
)

// confirmAndAnnotate shows plan, then, unless dryRun, asks for the cluster's name to be typed
// (or takes yes) and writes the break-glass annotation; what names the request in the line
// that says how to follow it.
func confirmAndAnnotate(cmd *cobra.Command, clients *kube.Clients, vc *v1beta1.ValkeyCluster, plan *strings.Builder, dryRun, yes bool, annotation, value, what string) error {
	out := cmd.OutOrStdout()
	if err := flush(out, plan); err != nil {
		return err
	}
	if dryRun {
		_, err := fmt.Fprintln(out, "Dry run: nothing was changed.")
		return err
	}
	if err := confirm.Typed(cmd.InOrStdin(), out, vc.Name, yes); err != nil {
		return err
	}
	if err := kube.Annotate(cmd.Context(), clients.Dynamic, clients.Namespace, vc.Name, annotation, value); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "%s requested; follow it with: kubectl valkey history %s --watch\n", what, vc.Name)
	return err
}

// knownPods are the cluster's pods: those status.nodes lists (a lost pod stays there with what
// it last reported) and those labelled as the cluster's (a pod that never answered is in no
// survey). A name in neither is refused before anything is written: the operator would
// refuse it too, later, with an Event.
func knownPods(ctx context.Context, clients *kube.Clients, vc *v1beta1.ValkeyCluster) ([]string, error) {
	var out []string
	for _, n := range vc.Status.Nodes {
		out = append(out, n.Pod)
	}
	pods, err := clients.Core.CoreV1().Pods(vc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.ClusterSelector(vc.Name)})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s/%s: %w", vc.Namespace, vc.Name, err)
	}
	for _, p := range pods.Items {
		if !slices.Contains(out, p.Name) {
			out = append(out, p.Name)
		}
	}
	return out, nil
}

// checkPods refuses a name that is not one of the cluster's pods.
func checkPods(vc *v1beta1.ValkeyCluster, known, names []string) error {
	for _, name := range names {
		if !slices.Contains(known, name) {
			return fmt.Errorf("%s is not a pod of %s/%s (neither in status.nodes nor labelled %s): nothing was changed", name, vc.Namespace, vc.Name, kube.ClusterSelector(vc.Name))
		}
	}
	return nil
}

// writeFacts prints what status says now that the decision is about.
func writeFacts(b *strings.Builder, vc *v1beta1.ValkeyCluster, annotation, current string) {
	st := vc.Status
	t := output.NewTable("", "")
	t.Row("  State:", orNone(string(st.State)))
	if vc.Spec.Topology != v1beta1.TopologyCluster {
		t.Row("  Primary:", orNone(st.Primary)+" (as last recorded)")
	}
	if st.Waiting != "" {
		t.Row("  Waiting for:", st.Waiting)
	}
	if current != "" {
		t.Row("  Replaces:", annotation+"="+current)
	}
	_, _ = t.WriteRowsTo(b)
}

// writeNodes prints the nodes of status that names or (with except) the nodes of shard other
// than names, as last surveyed.
func writeNodes(b *strings.Builder, nodes []v1beta1.NodeStatus) {
	if len(nodes) == 0 {
		b.WriteString("  (none recorded in status)\n")
		return
	}
	t := output.NewTable("  POD", "ROLE", "SHARD", "OFFSET", "READY")
	for _, n := range nodes {
		t.Row("  "+n.Pod, orNone(string(n.Role)), strconv.Itoa(int(n.Shard)), strconv.FormatInt(n.ReplicationOffset, 10), strconv.FormatBool(n.Ready))
	}
	_, _ = t.WriteTo(b)
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// flush writes what b holds to w.
func flush(w io.Writer, b *strings.Builder) error {
	_, err := io.WriteString(w, b.String())
	return err
}
