package report

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/nodecli"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
)

// archiveFlag names the archive's file. It is not -o, which is the output format on every
// verb that reads, as on kubectl's.
const archiveFlag = "archive"

// NewCmd is the report verb. now names the archive and dates its files.
func NewCmd(flags *kube.Flags, now func() time.Time) *cobra.Command {
	file := ""
	format := format{output.Text}
	cmd := &cobra.Command{
		Use:   "report NAME",
		Short: "Collect a support bundle of a ValkeyCluster into one archive, secrets redacted",
		Long: `Collect what a support case about a ValkeyCluster needs into one .tar.gz:

  summary.txt                what was collected, and what was not and why
  cluster.yaml               the ValkeyCluster: spec, status, metadata
  history.txt                status.history (kubectl valkey history)
  journal.txt, journal.json  every transition the operator journaled (history --full; needs get
                             on journals.journal.valkey.fsm.dev); journal.json with the
                             observations kept for replay: kubectl valkey replay journal.json
  events.txt                 the Events of the cluster, its pods, StatefulSets and claims
  pods/POD.yaml              each pod
  logs/POD/CONTAINER.log     each container's log (the last 20000 lines), and
                             CONTAINER.previous.log when it restarted
  nodes/POD/*.txt            each node's INFO everything, ROLE, CONFIG GET * (as valkey.conf
                             lines) and, in a Cluster topology, CLUSTER INFO and NODES

Each node is asked with valkey-cli inside its pod (pods/exec) as the operator's user, whose
password is read from the cluster's auth Secret and written into valkey-cli's input
(--askpass): never on a command line (see kubectl valkey cli --help).

Every file is redacted before it is written: every value of the cluster's Secrets (the auth
Secret, a rotation's, spec.auth.existingSecret, the TLS Secret, the backup store's
credentials, the ValkeyACL users' password Secrets, any Secret with the cluster's label) and
its base64 forms, requirepass/masterauth/tls-*-pass values, ACL password hashes and PEM private
keys. Secrets themselves are not collected. A Secret that cannot be read is named in the
summary: its values are then redacted only where a pattern matches.

A part that cannot be collected (no right to it, a pod not running, a node that does not
answer) is noted in the summary and as PART.error in the archive; the report goes on.

The archive is --archive FILE (default valkey-report-NAMESPACE-NAME-TIME.tar.gz in the current
directory). -o json or -o yaml prints the summary as a structure (cluster, archive, collected,
missing with reasons, notes) instead of text.`,
		Example: `  kubectl valkey report cache
  kubectl valkey report cache -n prod --archive /tmp/cache-report.tar.gz
  kubectl valkey report cache --archive cache.tar.gz -o json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: flags.CompleteClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			clients, err := flags.NewClients()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			u, err := kube.GetCluster(ctx, clients.Dynamic, clients.Namespace, args[0])
			if err != nil {
				return err
			}
			vc, err := kube.Typed(u)
			if err != nil {
				return err
			}
			at := now().UTC()
			base := fmt.Sprintf("valkey-report-%s-%s-%s", vc.Namespace, vc.Name, at.Format("20060102-150405"))
			path := file
			if path == "" {
				path = base + ".tar.gz"
			}
			// Owner-only: pod logs are application data even with the secrets removed.
			f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			b := newBundle(f, base, at)
			collectErr := collect(ctx, clients, u, vc, b, now)
			if collectErr == nil {
				collectErr = b.close()
			}
			if err := f.Close(); collectErr == nil {
				collectErr = err
			}
			if collectErr != nil {
				return fmt.Errorf("writing %s: %w", path, collectErr)
			}
			out := cmd.OutOrStdout()
			if format.Format != output.Text {
				return output.Encode(out, b.structured(vc.Namespace+"/"+vc.Name, path), format.Format)
			}
			fmt.Fprintf(out, "Report of %s/%s written to %s\n", vc.Namespace, vc.Name, path)
			_, err = out.Write(b.summary())
			return err
		},
	}
	cmd.Flags().StringVar(&file, archiveFlag, "", "The archive to write (default valkey-report-NAMESPACE-NAME-TIME.tar.gz in the current directory)")
	cmd.Flags().VarP(&format, "output", "o", "Output format of the summary: text, json or yaml")
	return cmd
}

// collect writes every part into b. Only a failure to write the archive is returned; a part
// that cannot be collected is recorded in b.
func collect(ctx context.Context, c *kube.Clients, u *unstructured.Unstructured, vc *v1beta1.ValkeyCluster, b *bundle, now func() time.Time) error {
	values, notes := secretValues(ctx, c.Core, c.Dynamic, vc)
	b.redact, b.notes = newRedactor(values), notes

	content, err := clusterYAML(u)
	if err := b.collected("cluster.yaml", content, err); err != nil {
		return err
	}
	content, err = historyText(vc, now)
	if err := b.collected("history.txt", content, err); err != nil {
		return err
	}
	text, doc, err := journal(ctx, c.Core, vc, now)
	if err := b.collected("journal.txt", text, err); err != nil {
		return err
	}
	if err == nil {
		if err := b.collected("journal.json", doc, nil); err != nil {
			return err
		}
	}

	selector := metav1.ListOptions{LabelSelector: kube.ClusterSelector(vc.Name)}
	pods, err := c.Core.CoreV1().Pods(vc.Namespace).List(ctx, selector)
	if err != nil {
		// The Events of the cluster itself are still worth having.
		if err := b.collected("pods", nil, fmt.Errorf("listing the cluster's pods: %w", err)); err != nil {
			return err
		}
		pods = &corev1.PodList{}
	}
	owned := map[types.UID]bool{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		owned[pod.UID] = true
		content, err := objectYAML(pod)
		if err := b.collected("pods/"+pod.Name+".yaml", content, err); err != nil {
			return err
		}
		for _, ctr := range containers(pod) {
			content, err := containerLog(ctx, c.Core, pod, ctr.name, false)
			if err := b.collected(logPath(pod.Name, ctr.name, false), content, err); err != nil {
				return err
			}
			if ctr.restarted {
				content, err := containerLog(ctx, c.Core, pod, ctr.name, true)
				if err := b.collected(logPath(pod.Name, ctr.name, true), content, err); err != nil {
					return err
				}
			}
		}
	}
	// The StatefulSets and claims only for their Events: their state is the pods'.
	if sets, err := c.Core.AppsV1().StatefulSets(vc.Namespace).List(ctx, selector); err == nil {
		for _, s := range sets.Items {
			owned[s.UID] = true
		}
	}
	if claims, err := c.Core.CoreV1().PersistentVolumeClaims(vc.Namespace).List(ctx, selector); err == nil {
		for _, cl := range claims.Items {
			owned[cl.UID] = true
		}
	}
	content, err = events(ctx, c.Core, vc.Namespace, vc.UID, owned)
	if err := b.collected("events.txt", content, err); err != nil {
		return err
	}
	return collectNodes(ctx, c, vc, pods.Items, b)
}

// collectNodes asks every running node what nodeCommands list.
func collectNodes(ctx context.Context, c *kube.Clients, vc *v1beta1.ValkeyCluster, pods []corev1.Pod, b *bundle) error {
	password, passwordErr := nodecli.Password(ctx, c.Core, vc.Namespace, vc.Name, kube.KeyOperatorPassword)
	ex := nodecli.Exec{Config: c.Config, Core: c.Core}
	for i := range pods {
		target, targetErr := nodecli.TargetOfPod(&pods[i], vc.Name)
		for _, cmd := range nodeCommands {
			if cmd.clusterOnly && vc.Spec.Topology != v1beta1.TopologyCluster {
				continue
			}
			name := "nodes/" + pods[i].Name + "/" + cmd.file
			var content []byte
			err := passwordErr
			if err == nil {
				err = targetErr
			}
			if err == nil {
				content, err = runNode(ctx, ex, vc.Namespace, target, password, cmd)
			}
			if err := b.collected(name, content, err); err != nil {
				return err
			}
		}
	}
	return nil
}
