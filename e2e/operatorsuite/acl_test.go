package operatorsuite

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestValkeyACLUsersReachEveryNode: a ValkeyACL gives every pod of a Replication cluster a user
// limited to app:* keys (NOPERM on other keys), with its password from a Secret; a pod deleted
// and re-created, and a pod added by a scale-up, have it too; a rule Valkey refuses, and rules
// granting administrative commands without allowAdmin (+@all, and one command named each way:
// an alias, a subcommand, a first argument) are Refused with the reason in status and an Event
// while the other users keep working, and reach no node; with allowAdmin they are applied; a second
// resource for a user already held, and a missing password Secret, are refused; one naming a
// cluster that does not exist is Pending with that reason; an edit Valkey refuses leaves the
// user as last accepted on every node; narrowing the
// rules narrows them on every node; deleting the ValkeyACL deletes the user everywhere.
func TestValkeyACLUsersReachEveryNode(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 6*time.Minute)
	for name, pw := range map[string]string{"app-pw": "app-secret-1", "boss-pw": "boss-secret"} {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: map[string]string{"password": pw}}
		if err := k.Create(ctx, sec); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.Create(ctx, newCluster(ns, "users", v1alpha1.TopologyReplication, 2)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "users", 2*time.Minute, "Steady with 2 ready", steadyWith(2))
	app := newACL(ns, "app", "app", "app-pw", "~app:*", "+@read", "+@write", "+ping", "+hello")
	if err := k.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	waitACL(t, ns, "app", "Applied", "2/2")
	kubectlOut(t, ctxFor(t, 40*time.Second), "wait", "--for=condition=Ready", "valkeyacl/app", "-n", ns, "--timeout=30s")
	everyNode(t, ctx, ns, "app", "app-secret-1", true, true)

	// A pod re-created, and one added by a scale-up.
	vc := get(t, ns, "users")
	replica := ""
	for _, n := range vc.Status.Nodes {
		if n.Role == v1alpha1.NodeRoleReplica {
			replica = n.Pod
		}
	}
	var pod corev1.Pod
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: replica}, &pod); err != nil {
		t.Fatal(err)
	}
	if err := k.Delete(ctx, &pod); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		var again corev1.Pod
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: replica}, &again); err == nil && again.UID != pod.UID && again.Status.PodIP != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not re-created", replica)
		}
	}
	waitFor(t, ns, "users", 2*time.Minute, "Steady with 2 ready after the re-creation", steadyWith(2))
	vc = get(t, ns, "users")
	vc.Spec.Replicas = 3
	update(t, ctx, vc)
	waitFor(t, ns, "users", 2*time.Minute, "Steady with 3 ready", steadyWith(3))
	waitACL(t, ns, "app", "Applied", "3/3")
	everyNode(t, ctx, ns, "app", "app-secret-1", true, true)

	// Refused: a command Valkey does not know; administrative commands without allowAdmin.
	if err := k.Create(ctx, newACL(ns, "typo", "typo", "app-pw", "+nosuchcommand")); err != nil {
		t.Fatal(err)
	}
	if a := waitACL(t, ns, "typo", "Refused", ""); !strings.Contains(a.Status.Reason, "refused by Valkey") {
		t.Errorf("a rule Valkey refuses: reason %q", a.Status.Reason)
	}
	boss := newACL(ns, "boss", "boss", "boss-pw", "~*", "+@all")
	if err := k.Create(ctx, boss); err != nil {
		t.Fatal(err)
	}
	if a := waitACL(t, ns, "boss", "Refused", ""); !strings.Contains(a.Status.Reason, "allowAdmin") || !strings.Contains(a.Status.Reason, "CONFIG SET") {
		t.Errorf("administrative rules without allowAdmin: reason %q", a.Status.Reason)
	}
	if !eventSeen(t, ctx, ns, "boss", "ACLRefused") {
		t.Error("no ACLRefused Event about the ValkeyACL")
	}
	// Each way of naming one administrative command without allowAdmin is refused too, and the
	// user reaches no node: the check is the node's whole command table, not a sample.
	shapes := []struct{ rule, command string }{{"+slaveof", "SLAVEOF"}, {"+config|get", "CONFIG GET"}, {"+acl|deluser", "ACL DELUSER"},
		{"+psync", "PSYNC"}, {"+client|pause", "CLIENT PAUSE"}, {"+cluster|meet", "CLUSTER MEET"}, {"+debug|sleep", "DEBUG SLEEP"}}
	for i, sh := range shapes {
		if err := k.Create(ctx, newACL(ns, fmt.Sprintf("escalate-%d", i), fmt.Sprintf("escalate%d", i), "boss-pw", "~app:*", "+get", v1alpha1.ACLRule(sh.rule))); err != nil {
			t.Fatal(err)
		}
	}
	for i, sh := range shapes {
		if a := waitACL(t, ns, fmt.Sprintf("escalate-%d", i), "Refused", ""); !strings.Contains(a.Status.Reason, "allowAdmin") || !strings.Contains(a.Status.Reason, sh.command) {
			t.Errorf("rule %s without allowAdmin: reason %q, want it refused naming %s", sh.rule, a.Status.Reason, sh.command)
		}
		for _, n := range get(t, ns, "users").Status.Nodes {
			if c, err := userClient(n.IP, fmt.Sprintf("escalate%d", i), "boss-secret"); err == nil {
				c.Close()
				t.Errorf("user escalate%d (%s) authenticates on %s: a refused user reached a node", i, sh.rule, n.Pod)
			}
		}
	}
	everyNode(t, ctx, ns, "app", "app-secret-1", true, true)
	if err := k.Get(ctx, client.ObjectKeyFromObject(boss), boss); err != nil {
		t.Fatal(err)
	}
	boss.Spec.AllowAdmin = true
	if err := k.Update(ctx, boss); err != nil {
		t.Fatal(err)
	}
	waitACL(t, ns, "boss", "Applied", "3/3")
	// A second resource for a user another holds, and a password Secret that does not exist.
	if err := k.Create(ctx, newACL(ns, "boss-again", "boss", "boss-pw", "~*", "+@read")); err != nil {
		t.Fatal(err)
	}
	if a := waitACL(t, ns, "boss-again", "Refused", ""); !strings.Contains(a.Status.Reason, "defined by ValkeyACL boss already") {
		t.Errorf("a second ValkeyACL for user boss: reason %q", a.Status.Reason)
	}
	if err := k.Create(ctx, newACL(ns, "no-password", "nopw", "missing-pw", "~*", "+@read")); err != nil {
		t.Fatal(err)
	}
	if a := waitACL(t, ns, "no-password", "Refused", ""); !strings.Contains(a.Status.Reason, "password Secret missing-pw") {
		t.Errorf("a missing password Secret: reason %q", a.Status.Reason)
	}

	// A ValkeyACL of a cluster that does not exist says so.
	orphan := newACL(ns, "orphan", "orphan", "app-pw", "+@read")
	orphan.Spec.Cluster = "nowhere"
	if err := k.Create(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	if a := waitACL(t, ns, "orphan", "Pending", ""); !strings.Contains(a.Status.Reason, "ValkeyCluster nowhere is not found") {
		t.Errorf("a ValkeyACL of a missing cluster: reason %q", a.Status.Reason)
	}

	// An edit Valkey refuses: Refused, and the user keeps its last accepted rules meanwhile.
	if err := k.Get(ctx, client.ObjectKeyFromObject(app), app); err != nil {
		t.Fatal(err)
	}
	app.Spec.Rules = append(app.Spec.Rules, "+nosuchcommand")
	if err := k.Update(ctx, app); err != nil {
		t.Fatal(err)
	}
	if a := waitACL(t, ns, "app", "Refused", ""); !strings.Contains(a.Status.Reason, "the nodes keep the user as last accepted") {
		t.Errorf("a refused edit: reason %q", a.Status.Reason)
	}
	everyNode(t, ctx, ns, "app", "app-secret-1", true, true)

	// Narrowed: reads only.
	if err := k.Get(ctx, client.ObjectKeyFromObject(app), app); err != nil {
		t.Fatal(err)
	}
	app.Spec.Rules = []v1alpha1.ACLRule{"~app:*", "+@read", "+ping", "+hello"}
	if err := k.Update(ctx, app); err != nil {
		t.Fatal(err)
	}
	waitACLGeneration(t, ns, "app", app.Generation) // Update returned the new generation
	everyNode(t, ctx, ns, "app", "app-secret-1", true, false)

	// Deleted: the user is gone from every node.
	if err := k.Delete(ctx, app); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		refused := 0
		for _, n := range get(t, ns, "users").Status.Nodes {
			if c, err := userClient(n.IP, "app", "app-secret-1"); err != nil {
				refused++
			} else {
				c.Close()
			}
		}
		if refused == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deleted ValkeyACL's user still authenticates on %d of 3 nodes", 3-refused)
		}
	}

	// The cluster deleted: its ValkeyACLs stay, and say so instead of claiming to be applied.
	if err := k.Delete(ctx, get(t, ns, "users")); err != nil {
		t.Fatal(err)
	}
	if a := waitACL(t, ns, "boss", "Pending", ""); !strings.Contains(a.Status.Reason, "ValkeyCluster users is not found") {
		t.Errorf("a ValkeyACL of a deleted cluster: %q", a.Status.Reason)
	}
}

func newACL(ns, name, user, secret string, rules ...v1alpha1.ACLRule) *v1alpha1.ValkeyACL {
	return &v1alpha1.ValkeyACL{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ValkeyACLSpec{
		Cluster: "users", User: user, Rules: rules, PasswordSecrets: []v1alpha1.SecretKeyRef{{Name: secret}},
	}}
}

// waitACL waits for the ValkeyACL's phase (and applied count, unless empty) at its generation.
func waitACL(t *testing.T, ns, name, phase, applied string) *v1alpha1.ValkeyACL {
	t.Helper()
	var a v1alpha1.ValkeyACL
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &a)
		if err == nil && a.Status.ObservedGeneration == a.Generation && a.Status.Phase == phase && (applied == "" || a.Status.Applied == applied) {
			return &a
		}
		if time.Now().After(deadline) {
			t.Fatalf("ValkeyACL %s not %s %s: %v, status %+v\n%s", name, phase, applied, err, a.Status, operatorTrail(ns))
		}
	}
}

// waitACLGeneration waits until the ValkeyACL's status describes generation gen, Applied.
func waitACLGeneration(t *testing.T, ns, name string, gen int64) {
	t.Helper()
	a := waitACL(t, ns, name, "Applied", "")
	if a.Generation < gen {
		t.Fatalf("ValkeyACL %s at generation %d, want %d", name, a.Generation, gen)
	}
}

// everyNode checks, on every pod, that user authenticates with password and may write app:*
// keys (on the primary) or not, and never others; reads of app:* keys work everywhere.
func everyNode(t *testing.T, ctx context.Context, ns, user, password string, read, write bool) {
	t.Helper()
	vc := get(t, ns, "users")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		var problems []string
		for _, n := range vc.Status.Nodes {
			problems = append(problems, nodeAllows(ctx, n, user, password, read, write)...)
		}
		if len(problems) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("user %s: %s", user, strings.Join(problems, "; "))
		}
		vc = get(t, ns, "users")
	}
}

func nodeAllows(ctx context.Context, n v1alpha1.NodeStatus, user, password string, read, write bool) []string {
	c, err := userClient(n.IP, user, password)
	if err != nil {
		return []string{fmt.Sprintf("%s: AUTH: %v", n.Pod, err)}
	}
	defer c.Close()
	var out []string
	if err := c.Do(ctx, c.B().Get().Key("app:1").Build()).Error(); (err == nil || vk.IsValkeyNil(err)) != read {
		out = append(out, fmt.Sprintf("%s: GET app:1: %v", n.Pod, err))
	}
	if err := c.Do(ctx, c.B().Get().Key("other:1").Build()).Error(); err == nil || vk.IsValkeyNil(err) || !strings.Contains(err.Error(), "NOPERM") {
		out = append(out, fmt.Sprintf("%s: GET other:1 not refused with NOPERM: %v", n.Pod, err))
	}
	if n.Role == v1alpha1.NodeRolePrimary {
		err := c.Do(ctx, c.B().Set().Key("app:1").Value("v").Build()).Error()
		if (err == nil) != write {
			out = append(out, fmt.Sprintf("%s: SET app:1: %v, want allowed=%v", n.Pod, err, write))
		}
	}
	return out
}

func userClient(ip, user, password string) (vk.Client, error) {
	return vk.NewClient(vk.ClientOption{InitAddress: []string{net.JoinHostPort(ip, "6379")}, Username: user, Password: password,
		DisableCache: true, ForceSingleClient: true, DisableRetry: true, Dialer: net.Dialer{Timeout: 2 * time.Second}})
}
