package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
	"github.com/valkey-fsm/valkey-operator/internal/version"
)

// buildOperator builds the operator's image (its OCI layout, which the local cluster runs the
// chart's pod from, as make image builds it for users) and the kubectl plugin into .cache/bin,
// both stamped with the version.
func buildOperator(root string) (layoutDir, plugin string, err error) {
	if layoutDir, err = localcluster.BuildOperatorImage(root); err != nil {
		return "", "", err
	}
	plugin = filepath.Join(root, ".cache", "bin", "kubectl-valkey")
	stamp := map[string]string{}
	for key, args := range map[string][]string{"version": {"describe", "--tags", "--always", "--dirty"}, "commit": {"rev-parse", "--short", "HEAD"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		if out, err := cmd.Output(); err == nil {
			stamp[key] = strings.TrimSpace(string(out))
		}
	}
	cmd := exec.Command("go", "build", "-ldflags", version.LDFlags(stamp["version"], stamp["commit"]), "-o", plugin, "./plugin")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("go build ./plugin: %w\n%s", err, b)
	}
	return layoutDir, plugin, nil
}

// installOperator installs the chart with the project's pinned helm and waits for it.
func installOperator(root, kubeconfig string) error {
	fmt.Println("installing the operator's Helm chart (charts/valkey-operator)...")
	cmd := exec.Command(filepath.Join(root, "hack", "helm.sh"), "install", "valkey-operator", filepath.Join(root, "charts", "valkey-operator"),
		"--namespace", "valkey-operator-system", "--create-namespace", "--wait", "--timeout", "3m", "--kubeconfig", kubeconfig)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// waitSteady waits until the ValkeyCluster reports Steady with every node ready.
func waitSteady(ctx context.Context, cl *localcluster.Cluster, ns, name string) error {
	dyn, err := dynamic.NewForConfig(cl.RESTConfig())
	if err != nil {
		return err
	}
	gvr := schema.GroupVersionResource{Group: "valkey.fsm.dev", Version: "v1alpha1", Resource: "valkeyclusters"}
	deadline := time.Now().Add(3 * time.Minute)
	last := ""
	for time.Now().Before(deadline) {
		obj, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			state, _, _ := unstructuredString(obj.Object, "status", "state")
			ready, _, _ := unstructuredString(obj.Object, "status", "readyNodes")
			if s := state + " " + ready; s != last {
				fmt.Printf("  %s: state %s, ready %s\n", name, state, ready)
				last = s
			}
			if n := strings.Split(ready, "/"); state == "Steady" && len(n) == 2 && n[0] == n[1] {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s/%s not Steady after 3 minutes", ns, name)
}

func unstructuredString(obj map[string]any, path ...string) (string, bool, error) {
	cur := any(obj)
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[p]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

// showPlugin prints what `kubectl valkey status`, `history` and `history --full` (the
// operator's journal, through the API server) show.
func showPlugin(plugin, kubeconfig, ns, name string) {
	for _, args := range [][]string{{"status"}, {"history"}, {"history", "--full"}} {
		fmt.Printf("\n$ kubectl valkey %s %s\n", strings.Join(args, " "), name)
		cmd := exec.Command(plugin, append(args, name, "-n", ns, "--kubeconfig", kubeconfig)...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		_ = cmd.Run()
	}
}

// clientHint says how to reach the demo's primary with valkey-cli.
func clientHint(ctx context.Context, cl *localcluster.Cluster, ns, name string) string {
	cs := cl.Clientset()
	svc, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	var sec *corev1.Secret
	if sec, err = cs.CoreV1().Secrets(ns).Get(ctx, name+"-auth", metav1.GetOptions{}); err != nil {
		return ""
	}
	return fmt.Sprintf("  valkey-cli -h %s -p 6379 --pass %s --no-auth-warning ping", svc.Spec.ClusterIP, string(sec.Data["password"]))
}

// backupHint tells how to try backups against the S3 server testdata/s3/versitygw.yaml runs
// (Service s3, Secret s3-credentials, bucket backups), when it was applied.
func backupHint(ctx context.Context, cl *localcluster.Cluster, ns, name string) string {
	svc, err := cl.Clientset().CoreV1().Services(ns).Get(ctx, "s3", metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return fmt.Sprintf(`Backups go to the S3 server (versitygw) at http://%s:7070, bucket backups, keys in Secret s3-credentials:
  kubectl patch vkc %s --type merge -p '{"spec":{"backup":{"store":{"bucket":"backups","endpoint":"http://%s:7070","forcePathStyle":true,"allowPlainHTTP":true,"credentialsSecret":"s3-credentials"}}}}'
  kubectl valkey backup %s --wait
  kubectl get valkeybackups
`, svc.Spec.ClusterIP, name, svc.Spec.ClusterIP, name)
}
