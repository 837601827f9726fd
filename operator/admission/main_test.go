package admission_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/internal/testapiserver"
	"github.com/valkey-fsm/valkey-operator/operator/admission"
	"github.com/valkey-fsm/valkey-operator/operator/conversionwebhook"
)

// The chart's release, as the tests render it: its webhooks exempt this user, the operator's
// ServiceAccount.
const (
	release, releaseNamespace = "valkey-operator", "valkey-operator-system"
	operatorUser              = "system:serviceaccount:" + releaseNamespace + ":" + release
)

// One API server for the package with the chart's CRDs, this package's webhooks served beside
// the conversion webhook (as the operator serves them), and the chart's own webhook
// configurations (webhooks.enabled) pointing at them.
var server = testapiserver.Server{
	ServiceRange: "127.231.0.0/16", CRDDir: "../../charts/valkey-operator/files/crds",
	Serve: serve, Then: installChartWebhooks,
}

func TestMain(m *testing.M) { testapiserver.Main(m, &server) }

func serve(srv webhook.Server, cfg *rest.Config) error {
	s := conversionwebhook.Scheme()
	reader, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	admission.Register(srv, s, reader, cs.AuthorizationV1().SubjectAccessReviews())
	return nil
}

// chartWebhooks renders the chart's webhook configurations with webhooks.enabled.
func chartWebhooks() ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	home, err := os.MkdirTemp("", "helm-home")
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = os.RemoveAll(home) }()
	// The chart's lowest Kubernetes (matchConditions are GA from 1.30).
	cmd := exec.Command(filepath.Join("..", "..", "hack", "helm.sh"), "template", release, filepath.Join("..", "..", "charts", "valkey-operator"),
		"--namespace", releaseNamespace, "--kube-version", "1.30.0", "--set", "webhooks.enabled=true", "--set", "crds.enabled=false")
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home, "KUBECONFIG="+filepath.Join(home, "none"))
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("helm template: %w", err)
	}
	var mutating []*admissionregistrationv1.MutatingWebhookConfiguration
	var validating []*admissionregistrationv1.ValidatingWebhookConfiguration
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			return nil, nil, err
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			var c admissionregistrationv1.MutatingWebhookConfiguration
			if err := yaml.UnmarshalStrict([]byte(doc), &c); err != nil {
				return nil, nil, err
			}
			mutating = append(mutating, &c)
		case "ValidatingWebhookConfiguration":
			var c admissionregistrationv1.ValidatingWebhookConfiguration
			if err := yaml.UnmarshalStrict([]byte(doc), &c); err != nil {
				return nil, nil, err
			}
			validating = append(validating, &c)
		}
	}
	if len(mutating) != 1 || len(validating) != 1 {
		return nil, nil, fmt.Errorf("the chart with webhooks.enabled renders %d mutating and %d validating webhook configurations, want one of each", len(mutating), len(validating))
	}
	return mutating, validating, nil
}

// pointAt sends a configuration's webhooks to base (https://host:port) instead of the chart's
// Service, which has no pod behind it here, trusting ca.
func pointAt(cc *admissionregistrationv1.WebhookClientConfig, base string, ca []byte) {
	cc.URL = new(base + *cc.Service.Path)
	cc.Service, cc.CABundle = nil, ca
}

// installChartWebhooks installs the chart's configurations, pointed at this process, and
// waits until the API server calls them.
func installChartWebhooks(env *envtest.Environment, cfg *rest.Config) error {
	mutating, validating, err := chartWebhooks()
	if err != nil {
		return err
	}
	o := env.WebhookInstallOptions
	base := "https://" + net.JoinHostPort(o.LocalServingHost, strconv.Itoa(o.LocalServingPort))
	c, err := client.New(cfg, client.Options{Scheme: conversionwebhook.Scheme()})
	if err != nil {
		return err
	}
	ctx := context.Background()
	for _, m := range mutating {
		for i := range m.Webhooks {
			pointAt(&m.Webhooks[i].ClientConfig, base, o.LocalServingCAData)
		}
		if err := c.Create(ctx, m); err != nil {
			return err
		}
	}
	for _, v := range validating {
		for i := range v.Webhooks {
			pointAt(&v.Webhooks[i].ClientConfig, base, o.LocalServingCAData)
		}
		if err := c.Create(ctx, v); err != nil {
			return err
		}
	}
	return waitRefused(ctx, c, "default", "does not exist")
}

// waitRefused waits until the API server, which learns of webhook configurations by a watch,
// refuses a ValkeyACL of a cluster that does not exist in ns with a message containing want
// (a dry run: nothing is stored).
func waitRefused(ctx context.Context, c client.Client, ns, want string) error {
	probe := &v1beta1.ValkeyACL{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: ns}, Spec: v1beta1.ValkeyACLSpec{
		Cluster: "absent", User: "probe-user", Rules: []v1beta1.ACLRule{"+get"}, PasswordSecretRefs: []v1beta1.SecretKeyRef{{Name: "absent"}},
	}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the webhooks are not called after 30s: a ValkeyACL of a missing cluster got %v, want an error with %q", err, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// warnings collects the API server's warnings to one client.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.list, "\n")
}

// admin is a client of the package's API server as its administrator, in a fresh namespace;
// its warnings are collected.
func admin(t *testing.T) (client.Client, string, *warnings) {
	t.Helper()
	_, cfg := server.Start(t)
	w := &warnings{}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: conversionwebhook.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "admission-"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return c, ns.Name, w
}

// userClient is a client authenticated as name (a client certificate), in groups.
func userClient(t *testing.T, name string, groups ...string) client.Client {
	t.Helper()
	env, _ := server.Start(t)
	u, err := env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(u.Config(), client.Options{Scheme: conversionwebhook.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// secret creates a Secret with data's keys.
func secret(t *testing.T, c client.Client, ns, name string, keys ...string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{}}
	for _, k := range keys {
		s.Data[k] = []byte("value-of-" + k)
	}
	if err := c.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// refused fails t unless err is a refusal whose message contains every one of want.
func refused(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s was admitted, want it refused with %q", what, want)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s was refused with %v, want a message with %q", what, err, w)
		}
	}
}
