package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
)

// CertManagerNamespace is where cert-manager keeps the Secrets ClusterIssuers refer to (its
// --cluster-resource-namespace), as in a default installation's namespace.
const CertManagerNamespace = "cert-manager"

var certManagerBuild struct {
	once sync.Once
	bin  string
	crds string
	err  error
}

// certManagerFiles returns cert-manager's controllers binary and the directory of its CRDs,
// building them the first time through hack/cert-manager.sh (minutes; `make tools` does it
// ahead of the tests). The binary runs as root on the host, not in a Pod, so it stays in the
// per-user cache instead of being copied into the program directory.
func certManagerFiles() (bin, crds string, err error) {
	b := &certManagerBuild
	b.once.Do(func() {
		root, err := kubeassets.RepoRoot()
		if err != nil {
			b.err = err
			return
		}
		var out, errOut bytes.Buffer
		cmd := exec.Command(filepath.Join(root, "hack", "cert-manager.sh"))
		cmd.Stdout, cmd.Stderr = &out, io.MultiWriter(&errOut, os.Stderr)
		if err := cmd.Run(); err != nil {
			b.err = fmt.Errorf("building cert-manager with hack/cert-manager.sh: %w: %s", err, errOut.String())
			return
		}
		b.bin = strings.TrimSpace(out.String())
		// The script keeps the CRDs beside the binary (what `hack/cert-manager.sh --crds` prints).
		b.crds = filepath.Join(filepath.Dir(b.bin), "crds")
	})
	return b.bin, b.crds, b.err
}

// certManagers are the clusters cert-manager was started in, so that a second StartCertManager
// is a no-op. A cluster leaves the set when the process has stopped with it.
var certManagers = struct {
	mu      sync.Mutex
	running map[*Cluster]bool
}{running: map[*Cluster]bool{}}

// StartCertManager installs cert-manager's CRDs (the release's own, v1.21.2) and runs its real
// controllers, built from the Go module proxy, as a host process with admin credentials: the
// issuers and cluster issuers, the CertificateRequest approver, the CA and self-signed signers
// and the Certificate machinery (trigger, key manager, request manager, issuing, readiness,
// revision manager), and cainjector, which fills the caBundle of webhook configurations, CRDs
// and APIServices annotated cert-manager.io/inject-ca-from (or -from-secret,
// inject-apiserver-ca). ACME, Vault and Venafi are not built in, nor is the webhook, so the API
// server applies only the CRDs' schemas. ClusterIssuers read their Secrets from
// CertManagerNamespace, which it creates. The process stops with the cluster (and dies with the
// test process); its output goes to the cluster's log as [cert-manager]. A second call on the
// same cluster does nothing.
func (c *Cluster) StartCertManager(ctx context.Context) error {
	certManagers.mu.Lock()
	defer certManagers.mu.Unlock()
	if certManagers.running[c] {
		return nil
	}
	bin, crdDir, err := certManagerFiles()
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no cert-manager CRDs in %s", crdDir)
	}
	var names []string
	for _, f := range files {
		if _, err := c.ApplyFile(ctx, f, ""); err != nil {
			return fmt.Errorf("installing cert-manager's CRDs: %w", err)
		}
		name, err := crdName(f)
		if err != nil {
			return err
		}
		names = append(names, name)
	}
	if err := c.waitCRDsEstablished(ctx, names, 60*time.Second); err != nil {
		return err
	}
	_, err = c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: CertManagerNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", CertManagerNamespace, err)
	}

	log := c.Log("cert-manager")
	cmd := exec.Command(bin, "--kubeconfig", c.KubeconfigPath(), "--cluster-resource-namespace", CertManagerNamespace)
	// The marker lets Stop's last sweep (and Leftovers) find the process, as the control
	// plane's.
	cmd.Env = append(os.Environ(), envClusterDir+"="+c.slot.dir)
	cmd.Stdout, cmd.Stderr = log, log
	// If this process dies without Stop (a panic), the kernel ends cert-manager too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting cert-manager: %w", err)
	}
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		if c.ctx.Err() == nil {
			// Not asked to stop: say so where a test's failure message sends its reader.
			fmt.Fprintf(log, "cert-manager-controllers exited: %v\n", err)
		}
		close(done)
	}()
	certManagers.running[c] = true
	// Stop cancels the cluster's context and waits for its background work before the control
	// plane goes, so cert-manager ends while the API server still answers it.
	c.goBackground(func() {
		select {
		case <-c.ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
		case <-done:
		}
		certManagers.mu.Lock()
		delete(certManagers.running, c)
		certManagers.mu.Unlock()
	})
	return nil
}

// crdName reads the name of the CustomResourceDefinition a file holds.
func crdName(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	obj := &unstructured.Unstructured{}
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(&obj.Object); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if obj.GetKind() != "CustomResourceDefinition" || obj.GetName() == "" {
		return "", fmt.Errorf("%s: not a named CustomResourceDefinition", path)
	}
	return obj.GetName(), nil
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// waitCRDsEstablished waits until every named CRD's Established condition is True: until
// then, creating its objects fails with "the server could not find the requested resource".
func (c *Cluster) waitCRDsEstablished(ctx context.Context, names []string, timeout time.Duration) error {
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	var pending string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			crd, err := dyn.Resource(crdResource).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				pending = fmt.Sprintf("%s: %v", n, err)
				return false, nil
			}
			if !crdEstablished(crd) {
				pending = n + " not Established"
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for cert-manager's CRDs (%s): %w", pending, err)
	}
	return nil
}

func crdEstablished(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, x := range conds {
		m, _ := x.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
