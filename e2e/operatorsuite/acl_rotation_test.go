package operatorsuite

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// A ValkeyACL user's password rotated the way the resource offers: a second password Secret
// added (both accepted on every node), the applications moving over at a random moment, the
// first Secret removed. A writer through the client Service and a reader on a replica, both as
// that user and reconnecting all the time, never see a command or an AUTH refused; afterwards
// the old password is refused on every node and the new one works with the user's rules; no
// pod restarted (same pods, restart counts and run ids).
func TestAValkeyACLPasswordRotatesUnderAWriterAndAReader(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 5*time.Minute)
	for name, pw := range map[string]string{"app-pw": "app-old-secret", "app-pw-2": "app-new-secret"} {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: map[string]string{"password": pw}}
		if err := k.Create(ctx, sec); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.Create(ctx, newCluster(ns, "users", v1alpha1.TopologyReplication, 3)); err != nil {
		t.Fatal(err)
	}
	vc := waitFor(t, ns, "users", 2*time.Minute, "Steady with 3 ready", steadyWith(3))
	acl := newACL(ns, "app", "app", "app-pw", "~app:*", "+@read", "+@write", "+ping", "+hello")
	if err := k.Create(ctx, acl); err != nil {
		t.Fatal(err)
	}
	waitACL(t, ns, "app", "Applied", "3/3")
	runs, pods := runIDs(t, vc), podRestarts(t, ctx, ns, vc)
	replicaIP := ""
	for _, n := range vc.Status.Nodes {
		if n.Role == v1alpha1.NodeRoleReplica {
			replicaIP = n.IP
		}
	}
	svc := clientServiceAddr(t, vc)
	writer := &passwordUser{name: "writer", addr: func() string { return svc }, user: "app", password: "app-old-secret"}
	reader := &passwordUser{name: "reader", addr: func() string { return replicaIP + ":6379" }, user: "app", password: "app-old-secret"}
	stop := writeAndRead(ctx, writer, reader, "app:rot:")
	defer stop()
	time.Sleep(time.Second)

	// Both passwords: applied to every node before anyone moves.
	var a v1alpha1.ValkeyACL
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &a); err != nil {
		t.Fatal(err)
	}
	a.Spec.PasswordSecrets = append(a.Spec.PasswordSecrets, v1alpha1.SecretKeyRef{Name: "app-pw-2"})
	if err := k.Update(ctx, &a); err != nil {
		t.Fatal(err)
	}
	waitACLGeneration(t, ns, "app", a.Generation)
	everyNode(t, ctx, ns, "app", "app-new-secret", true, true)
	everyNode(t, ctx, ns, "app", "app-old-secret", true, true)

	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("switch moments from seed %d", seed)
	first, second := time.Duration(rng.Int63n(int64(3*time.Second))), time.Duration(rng.Int63n(int64(3*time.Second)))
	movers := []*passwordUser{writer, reader}
	if rng.Intn(2) == 1 {
		movers[0], movers[1] = reader, writer
	}
	time.Sleep(first)
	movers[0].use("app-new-secret")
	time.Sleep(second)
	movers[1].use("app-new-secret")
	time.Sleep(time.Second)

	// The old Secret goes: the old password is refused everywhere, the new one keeps working.
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &a); err != nil {
		t.Fatal(err)
	}
	a.Spec.PasswordSecrets = []v1alpha1.SecretKeyRef{{Name: "app-pw-2"}}
	if err := k.Update(ctx, &a); err != nil {
		t.Fatal(err)
	}
	waitACLGeneration(t, ns, "app", a.Generation)
	time.Sleep(2 * time.Second)
	stop()
	for _, u := range movers {
		if len(u.failures) > 0 || u.ops < 50 {
			t.Errorf("%s: %d operations, %d refused: %s", u.name, u.ops, len(u.failures), strings.Join(u.failures[:min(5, len(u.failures))], "; "))
		}
	}
	everyNode(t, ctx, ns, "app", "app-new-secret", true, true)
	vc = get(t, ns, "users")
	for _, n := range vc.Status.Nodes {
		if c, err := userClient(n.IP, "app", "app-old-secret"); err == nil {
			c.Close()
			t.Errorf("%s: the removed password still authenticates", n.Pod)
		} else if !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("%s: the removed password failed otherwise than WRONGPASS: %v", n.Pod, err)
		}
	}
	if got := runIDs(t, vc); fmt.Sprint(got) != fmt.Sprint(runs) {
		t.Errorf("run ids changed: %v, were %v", got, runs)
	}
	if got := podRestarts(t, ctx, ns, vc); fmt.Sprint(got) != fmt.Sprint(pods) {
		t.Errorf("pods restarted: %v, were %v", got, pods)
	}
	t.Logf("writer %d and reader %d operations as the ValkeyACL user across the rotation, none refused", writer.ops, reader.ops)
}
