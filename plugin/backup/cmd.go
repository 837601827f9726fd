package backup

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// ValkeyBackups is the resource of the ValkeyBackup kind.
var ValkeyBackups = v1beta1.SchemeGroupVersion.WithResource("valkeybackups")

// NewCmd is the backup verb. now names backups created without --name.
func NewCmd(flags *kube.Flags, now func() time.Time) *cobra.Command {
	var name string
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "backup NAME",
		Short: "Take a backup of a cluster now (a ValkeyBackup)",
		Long: `Create a ValkeyBackup of the cluster: the operator streams each shard's snapshot from an
in-sync replica into the S3 store that the cluster's spec.backup.store names, checks it, and
records the files with their sizes and sha256 in the ValkeyBackup's status. Backups taken
this way are kept until you delete them (retention prunes scheduled backups only).
Follow it with kubectl get valkeybackup BACKUP -w, or wait here with --wait.`,
		Example: `  kubectl valkey backup orders
  kubectl valkey backup orders --name before-migration --wait`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: flags.CompleteClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			clients, err := flags.NewClients()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			vc, err := kube.GetTypedCluster(ctx, clients.Dynamic, clients.Namespace, args[0])
			if err != nil {
				return err
			}
			if vc.Spec.Backup == nil {
				return fmt.Errorf("ValkeyCluster %s/%s has no spec.backup: set spec.backup.store (bucket, credentialsSecret, endpoint for a store other than AWS) first; see docs/backup.md", clients.Namespace, args[0])
			}
			if name == "" {
				name = fmt.Sprintf("%s-%s", args[0], now().UTC().Format("20060102-150405"))
			}
			vb := &v1beta1.ValkeyBackup{
				TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "ValkeyBackup"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: clients.Namespace, Labels: map[string]string{"valkey.fsm.dev/cluster": args[0]}},
				Spec:       v1beta1.ValkeyBackupSpec{Cluster: args[0]},
			}
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(vb)
			if err != nil {
				return err
			}
			res := clients.Dynamic.Resource(ValkeyBackups).Namespace(clients.Namespace)
			if _, err := res.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating ValkeyBackup %s: %w", name, err)
			}
			out := cmd.OutOrStdout()
			if !wait {
				_, err := fmt.Fprintf(out, "backup %s of %s requested; follow it with: kubectl get valkeybackup %s -n %s -w\n", name, args[0], name, clients.Namespace)
				return err
			}
			fmt.Fprintf(out, "backup %s of %s requested; waiting (at most %s)\n", name, args[0], timeout)
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			return follow(ctx, res, name, out)
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "name of the ValkeyBackup (default: the cluster's name and the time)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the backup completes, or fails with no attempt left")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "how long --wait waits")
	return cmd
}

// follow prints the backup's phase changes until it completes or fails for good.
func follow(ctx context.Context, res dynamic.ResourceInterface, name string, out io.Writer) error {
	last := ""
	for {
		u, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var vb v1beta1.ValkeyBackup
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &vb); err != nil {
			return err
		}
		st := vb.Status
		line := string(st.Phase)
		if st.Reason != "" {
			line += ": " + st.Reason
		}
		if line != last && st.Phase != "" {
			fmt.Fprintln(out, line)
			last = line
		}
		switch {
		case st.Phase == v1beta1.BackupCompleted:
			_, err := fmt.Fprintf(out, "completed: %d shard(s), %d bytes, in %s\n", len(st.Shards), st.Size, st.Location)
			return err
		case st.Phase == v1beta1.BackupFailed && st.NextAttemptAt == nil:
			return fmt.Errorf("backup %s failed after %d attempt(s): %s", name, st.Attempts, st.Reason)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("backup %s is %s after waiting: %w", name, orNone(string(st.Phase)), ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "not started"
	}
	return s
}
