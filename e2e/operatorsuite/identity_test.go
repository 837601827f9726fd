package operatorsuite

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
)

// The in-process operators of this suite run as this ServiceAccount, bound to the ClusterRole
// that make generate writes for the chart (charts/valkey-operator/files/role.yaml): every
// test is then also a test of the shipped RBAC, and the API server's audit log says what the
// operator really did with it.
const (
	operatorSANamespace = "valkey-operator-suite"
	operatorSAName      = "valkey-operator"
	operatorSAUser      = "system:serviceaccount:" + operatorSANamespace + ":" + operatorSAName
)

// operatorConfig is the in-process operators' connection: the ServiceAccount's token.
var operatorConfig *rest.Config

// grantedButNotRequested are rules of the generated role that no API request exercises, so the
// audit log cannot show them in use; each says why it is needed anyway.
var grantedButNotRequested = map[string]string{
	// Checked by the OwnerReferencesPermissionEnforcement admission plugin (on in OpenShift and
	// some hardened clusters) when an owner reference sets blockOwnerDeletion: the operator
	// sets it on every object it owns. Not a request of its own.
	"update valkey.fsm.dev/valkeyclusters/finalizers": "blockOwnerDeletion on owned objects",
}

// listedByInformers: the informers behind the operator's cache stream their initial list
// through a watch (WatchList, on in this API server and client-go), so the audit log shows
// only watches; against an API server without it (older Kubernetes versions the chart
// supports) they fall back to list. Each watched kind therefore keeps list.
var listedByInformers = []string{
	"/configmaps", "/persistentvolumeclaims", "/pods", "/secrets", "/services",
	"apps/statefulsets", "policy/poddisruptionbudgets", "valkey.fsm.dev/valkeyclusters", "valkey.fsm.dev/valkeybackups", "valkey.fsm.dev/valkeyacls",
	"networking.k8s.io/networkpolicies", "apiextensions.k8s.io/customresourcedefinitions",
}

func init() {
	for _, r := range listedByInformers {
		grantedButNotRequested["list "+r] = "informers list when the API server does not stream watch lists"
	}
}

// setUpOperatorIdentity makes the ServiceAccount, binds the generated ClusterRole to it and
// gets it a token.
func setUpOperatorIdentity(c *localcluster.Cluster) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	role, err := generatedRole()
	if err != nil {
		return err
	}
	cs := c.Clientset()
	role.Name = "valkey-operator-suite"
	objects := []func() error{
		func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorSANamespace}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().ServiceAccounts(operatorSANamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: operatorSAName}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: role.Name},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: operatorSANamespace, Name: operatorSAName}},
			}, metav1.CreateOptions{})
			return err
		},
	}
	for _, create := range objects {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	tok, err := cs.CoreV1().ServiceAccounts(operatorSANamespace).CreateToken(ctx, operatorSAName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(12 * 3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("a token for the operator's ServiceAccount: %w", err)
	}
	operatorConfig = tokenConfig(c, tok.Status.Token)
	return nil
}

// tokenConfig is a connection to c's API server that authenticates with token (a
// ServiceAccount's) instead of the admin's certificate, at the admin's rate limits.
func tokenConfig(c *localcluster.Cluster, token string) *rest.Config {
	admin := c.RESTConfig()
	return &rest.Config{
		Host:            admin.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData, CAFile: admin.CAFile},
		BearerToken:     token,
		QPS:             admin.QPS,
		Burst:           admin.Burst,
	}
}

// generatedRole reads the ClusterRole make generate writes for the chart.
func generatedRole() (*rbacv1.ClusterRole, error) {
	root, err := kubeassets.RepoRoot()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, "charts/valkey-operator/files/role.yaml"))
	if err != nil {
		return nil, err
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(data, &role); err != nil {
		return nil, err
	}
	return &role, nil
}

// checkOperatorRequests reads every request the suite's operators made from the API server's
// audit log (not from the operator's code) and fails the run when one was refused, or, after
// the whole suite ran, when the generated role grants a verb that nothing used.
func checkOperatorRequests(c *localcluster.Cluster) error {
	events, err := c.AuditEvents(operatorSAUser)
	if err != nil {
		return err
	}
	if len(events) == 0 {
		return nil // no test ran an operator
	}
	used := map[string]int{}
	var errs []error
	refused := map[string]bool{}
	for _, e := range events {
		if e.Forbidden() {
			if what := e.Verb + " " + e.Resource(); !refused[what] {
				refused[what] = true
				errs = append(errs, fmt.Errorf("RBAC refused the operator %s (%s): the generated role lacks it", what, e.RequestURI))
			}
		}
		if e.ObjectRef != nil {
			used[e.Verb+" "+e.Resource()]++
		}
	}
	role, err := generatedRole()
	if err != nil {
		return err
	}
	granted := grantedRules(role)
	if wholeSuite() {
		for _, g := range granted {
			if used[g] == 0 && grantedButNotRequested[g] == "" {
				errs = append(errs, fmt.Errorf("the generated role grants %q, which the operator never requested in the whole suite: remove it from the +kubebuilder:rbac markers", g))
			}
		}
	}
	summary := make([]string, 0, len(used))
	for k, n := range used {
		summary = append(summary, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(summary)
	fmt.Fprintf(os.Stderr, "operatorsuite: the operator's requests (audit log, %d): %s\n", len(events), strings.Join(summary, ", "))
	return errors.Join(errs...)
}

// grantedRules lists the role's rules as "verb group/resource[/subresource]".
func grantedRules(role *rbacv1.ClusterRole) []string {
	var out []string
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, v+" "+g+"/"+res)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// wholeSuite is whether every test of the package was asked to run (no -run or -skip, not
// -short): only then is a rule nobody used a rule nobody needs.
func wholeSuite() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	if f := flag.Lookup("test.short"); f != nil && f.Value.String() == "true" {
		return false
	}
	return true
}
