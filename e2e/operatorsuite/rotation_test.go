package operatorsuite

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// passwordUser is a client that opens a new connection every few commands (so that every
// phase of a rotation sees fresh AUTHs) and switches to the auth Secret's password at a moment
// it was given: a writer through the client Service, a reader on a replica.
type passwordUser struct {
	name string
	addr func() string
	// user is the Valkey user ("": default, the application user of the auth Secret).
	user     string
	password string
	// failures are the commands (or AUTHs) that failed, with the password they used.
	mu       sync.Mutex
	failures []string
	ops      int
}

func (u *passwordUser) run(ctx context.Context, do func(c vk.Client, i int) error) {
	for i := 0; ctx.Err() == nil; {
		u.mu.Lock()
		pass := u.password
		u.mu.Unlock()
		c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{u.addr()}, Username: u.user, Password: pass, DisableCache: true, DisableRetry: true, ForceSingleClient: true})
		if err != nil {
			u.fail(fmt.Sprintf("AUTH with %.6s…: %v", pass, err))
			time.Sleep(50 * time.Millisecond)
			continue
		}
		for j := 0; j < 5 && ctx.Err() == nil; j++ {
			if err := do(c, i); err != nil && ctx.Err() == nil {
				u.fail(fmt.Sprintf("op %d with %.6s…: %v", i, pass, err))
			}
			i++
			u.mu.Lock()
			u.ops++
			u.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
		c.Close()
	}
}

// writeAndRead runs writer (SET prefix<i>) and reader (GET prefix0) until the returned stop is
// called; stop waits for both and may be called again.
func writeAndRead(ctx context.Context, writer, reader *passwordUser, prefix string) (stop func()) {
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		writer.run(cctx, func(c vk.Client, i int) error {
			return c.Do(cctx, c.B().Set().Key(fmt.Sprintf("%s%d", prefix, i)).Value("v").Build()).Error()
		})
	}()
	go func() {
		defer wg.Done()
		reader.run(cctx, func(c vk.Client, i int) error {
			err := c.Do(cctx, c.B().Get().Key(prefix+"0").Build()).Error()
			if vk.IsValkeyNil(err) {
				return nil
			}
			return err
		})
	}()
	return func() { cancel(); wg.Wait() }
}

func (u *passwordUser) fail(what string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.failures = append(u.failures, what)
}

func (u *passwordUser) use(password string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.password = password
}

// runIDs reads each pod's run id (INFO server) as the operator's user, with the password the
// auth Secret holds now.
func runIDs(t *testing.T, vc *v1alpha1.ValkeyCluster) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range vc.Status.Nodes {
		out[n.Pod] = nodeInfo(t, vc, n.IP, "server")["run_id"]
	}
	return out
}

// podRestarts is each pod's UID and container restart count.
func podRestarts(t *testing.T, ctx context.Context, ns string, vc *v1alpha1.ValkeyCluster) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range vc.Status.Nodes {
		var p corev1.Pod
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: n.Pod}, &p); err != nil {
			t.Fatal(err)
		}
		restarts := int32(0)
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
		out[n.Pod] = fmt.Sprintf("%s/%d", p.UID, restarts)
	}
	return out
}

// eventsSince lists the events of status.history from seq on.
func eventsSince(vc *v1alpha1.ValkeyCluster, from int64) []string {
	var out []string
	for _, h := range vc.Status.History {
		if h.Seq >= from {
			out = append(out, h.Event)
		}
	}
	return out
}

// Every password the operator manages is rotated under a writer (through the client Service)
// and a reader (on a replica) that reconnect all the time and switch to the new password at a
// random moment within the grace period: no command or AUTH of theirs is refused; afterwards the
// old passwords are refused on every node and the new ones work; no pod restarted (same pods,
// restart counts and run ids); the replicas follow the primary with the new replication
// password; history shows each step.
func TestPasswordsRotateWithoutARestartUnderAWriterAndAReader(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 6*time.Minute)
	vc := newCluster(ns, "rotating", v1alpha1.TopologyReplication, 3)
	const grace = 10 * time.Second
	vc.Spec.Auth.RotationGracePeriod = &metav1.Duration{Duration: grace}
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "rotating", 2*time.Minute, "Steady with 3 ready", steadyWith(3))
	writable(t, vc)
	old := map[string]string{}
	for _, key := range []string{kube.KeyClientPassword, kube.KeyOperatorPassword, kube.KeyReplicationPassword} {
		old[key] = secretKey(t, vc, key)
	}
	runs, pods := runIDs(t, vc), podRestarts(t, ctx, ns, vc)
	replicaIP := ""
	for _, n := range vc.Status.Nodes {
		if n.Role == v1alpha1.NodeRoleReplica {
			replicaIP = n.IP
		}
	}
	svc := clientServiceAddr(t, vc)
	writer := &passwordUser{name: "writer", addr: func() string { return svc }, password: old[kube.KeyClientPassword]}
	reader := &passwordUser{name: "reader", addr: func() string { return replicaIP + ":6379" }, password: old[kube.KeyClientPassword]}
	stop := writeAndRead(ctx, writer, reader, "rot:")
	defer stop()

	vc = get(t, ns, "rotating")
	seq := vc.Status.Machine.Seq
	vc.Annotations = map[string]string{v1beta1.AnnotationRotatePasswords: "all@" + time.Now().UTC().Format(time.RFC3339Nano)}
	update(t, ctx, vc)

	// The clients move over at a random moment after the new password is published.
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("switch moments from seed %d", seed)
	var published string
	for deadline := time.Now().Add(time.Minute); published == ""; time.Sleep(100 * time.Millisecond) {
		if p := secretKey(t, vc, kube.KeyClientPassword); p != old[kube.KeyClientPassword] {
			published = p
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new application password was not published within a minute\n%s", summary(get(t, ns, "rotating")))
		}
	}
	var switched sync.WaitGroup
	for _, u := range []*passwordUser{writer, reader} {
		switched.Add(1)
		after := time.Duration(rng.Int63n(int64(grace * 6 / 10)))
		go func() {
			defer switched.Done()
			time.Sleep(after)
			u.use(published)
		}()
	}
	switched.Wait()
	vc = waitFor(t, ns, "rotating", 2*time.Minute, "rotation complete", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.Machine != nil && vc.Status.Machine.Rotated != "" && vc.Status.Machine.Rotation == nil
	})
	time.Sleep(time.Second) // the clients keep going with the new password after the retirement
	stop()

	for _, u := range []*passwordUser{writer, reader} {
		if len(u.failures) > 0 {
			t.Errorf("%s: %d of %d commands refused or failed during the rotation, e.g. %v", u.name, len(u.failures), u.ops, u.failures[:min(3, len(u.failures))])
		}
		if u.ops < 50 {
			t.Errorf("%s ran only %d commands", u.name, u.ops)
		}
	}
	want := []string{string(machine.EventRotationRequested), string(machine.EventPasswordsAccepted), string(machine.EventGraceEnded), string(machine.EventRotationComplete)}
	if got := eventsSince(vc, seq+1); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("history after the request: %v, want %v\n%s", got, want, summary(vc))
	}
	for key, was := range old {
		if now := secretKey(t, vc, key); now == was || now == "" {
			t.Errorf("%s was not rotated", key)
		}
	}
	newOp := secretKey(t, vc, kube.KeyOperatorPassword)
	if got := runIDs(t, vc); fmt.Sprint(got) != fmt.Sprint(runs) {
		t.Errorf("run ids changed: %v, were %v", got, runs)
	}
	if got := podRestarts(t, ctx, ns, vc); fmt.Sprint(got) != fmt.Sprint(pods) {
		t.Errorf("pods re-created or restarted: %v, were %v", got, pods)
	}
	// An independent check of every node: the old passwords refused, the new ones working,
	// masterauth the new replication password, replicas linked.
	for _, n := range vc.Status.Nodes {
		for user, pw := range map[string]string{"default": old[kube.KeyClientPassword], "operator": old[kube.KeyOperatorPassword]} {
			if c, err := userClient(n.IP, user, pw); err == nil {
				c.Close()
				t.Errorf("%s: the old %s password still works", n.Pod, user)
			} else if !strings.Contains(err.Error(), "WRONGPASS") {
				t.Errorf("%s: old %s password: want WRONGPASS, got %v", n.Pod, user, err)
			}
		}
		c, err := userClient(n.IP, "operator", newOp)
		if err != nil {
			t.Fatalf("%s: new operator password: %v", n.Pod, err)
		}
		conf, err := c.Do(ctx, c.B().ConfigGet().Parameter("masterauth").Build()).AsStrMap()
		if err != nil || conf["masterauth"] != secretKey(t, vc, kube.KeyReplicationPassword) {
			t.Errorf("%s: masterauth is not the new replication password (%v)", n.Pod, err)
		}
		info, _ := c.Do(ctx, c.B().Info().Section("replication").Build()).ToString()
		c.Close()
		if n.Role == v1alpha1.NodeRoleReplica && !strings.Contains(info, "master_link_status:up") {
			t.Errorf("%s: replica not linked after the rotation:\n%s", n.Pod, info)
		}
	}
	// The rotation's Secret loses its passwords (old and new) on the next turn; it stays, empty
	// (the operator may not delete Secrets), and goes with the cluster.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var rotation corev1.Secret
		err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rotating-rotation"}, &rotation)
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		if len(rotation.Data) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rotation Secret still holds %d keys (old and new passwords) 20 s after the rotation", len(rotation.Data))
		}
	}
}

// retireNow asks for the old passwords of the rotation in progress to be retired now.
func retireNow(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	vc := get(t, ns, name)
	if vc.Annotations == nil {
		vc.Annotations = map[string]string{}
	}
	vc.Annotations[v1beta1.AnnotationRetireOldPasswords] = "now"
	update(t, ctx, vc)
}

// rotationPhase waits for the rotation in progress to reach phase.
func rotationPhase(t *testing.T, ns, name string, phase machine.RotationPhase) *v1alpha1.ValkeyCluster {
	t.Helper()
	return waitFor(t, ns, name, 2*time.Minute, "rotation "+string(phase), func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.Machine != nil && vc.Status.Machine.Rotation != nil && vc.Status.Machine.Rotation.Phase == string(phase)
	})
}

// rotated waits until the rotation whose ID starts with prefix completed.
func rotated(t *testing.T, ns, name, prefix string) *v1alpha1.ValkeyCluster {
	t.Helper()
	return waitFor(t, ns, name, 2*time.Minute, "rotation "+prefix+" complete", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.Machine != nil && vc.Status.Machine.Rotation == nil && strings.HasPrefix(vc.Status.Machine.Rotated, prefix)
	})
}

// A rotation of the replication and operator passwords interrupted by an operator restart (a
// new incarnation: the grace period starts again on its clock) and a failover (the old
// primary's pod deleted while the new passwords are published and the old still accepted):
// the replicas stay authenticated (writes acknowledged by WAIT on both), the user's retire
// request ends it. Then the application password changed in the user's own Secret is rotated
// to, without the auth Secret ever holding a password a node refuses.
func TestARotationSurvivesAnOperatorRestartAndAFailover(t *testing.T) {
	ns := cl.Namespace(t)
	op := startOperator(t, "")
	ctx := ctxFor(t, 8*time.Minute)
	if err := k.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-pw"}, StringData: map[string]string{"password": "first-password"}}); err != nil {
		t.Fatal(err)
	}
	vc := newCluster(ns, "rot", v1alpha1.TopologyReplication, 3)
	vc.Spec.Auth.ExistingSecret = &v1alpha1.SecretKeyReference{Name: "app-pw"}
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "rot", 2*time.Minute, "Steady with 3 ready", steadyWith(3))
	oldRepl := secretKey(t, vc, kube.KeyReplicationPassword)

	// Refused: the application password of this cluster is the user's.
	vc.Annotations = map[string]string{v1beta1.AnnotationRotatePasswords: "default@1"}
	update(t, ctx, vc)
	waitFor(t, ns, "rot", time.Minute, "refused request removed", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Annotations[v1beta1.AnnotationRotatePasswords] == ""
	})
	if note := eventNote(t, ctx, ns, "rot", "RotationRefused"); !strings.Contains(note, "Secret app-pw") {
		t.Errorf("RotationRefused Event: %q", note)
	}

	vc = get(t, ns, "rot")
	vc.Annotations = map[string]string{v1beta1.AnnotationRotatePasswords: "replication,operator@2"}
	update(t, ctx, vc)
	vc = rotationPhase(t, ns, "rot", machine.RotationPublished)
	if vc.Annotations[v1beta1.AnnotationRotatePasswords] != "" {
		t.Errorf("the request annotation is still there once recorded")
	}

	// The operator restarts, and the primary's pod is deleted while the old passwords still work,
	// with no grace period: a crash, so a failover (a deletion with its grace period is a
	// hand-over now, primary-leaving).
	op.stop(t)
	startOperator(t, op.journal)
	var primary corev1.Pod
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: vc.Status.Primary}, &primary); err != nil {
		t.Fatal(err)
	}
	if err := k.Delete(ctx, &primary, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "rot", 3*time.Minute, "Steady with 3 ready after the failover", func(v *v1alpha1.ValkeyCluster) bool {
		return steadyWith(3)(v) && v.Status.Primary != primary.Name
	})
	c := writable(t, vc)
	if err := setAndWait(ctx, c, "after-failover:", 10, 2); err != nil {
		t.Fatalf("writes after the failover during the rotation not acknowledged by both replicas: %v\n%s", err, summary(vc))
	}
	if got := get(t, ns, "rot"); got.Status.Machine.Rotation == nil || got.Status.Machine.Rotation.Phase != string(machine.RotationPublished) {
		t.Fatalf("the rotation should still be within its grace period: %+v", got.Status.Machine.Rotation)
	}

	retireNow(t, ctx, ns, "rot")
	vc = rotated(t, ns, "rot", "replication,operator@2")
	events := strings.Join(eventsSince(vc, 1), ",")
	for _, e := range []machine.Event{machine.EventGraceClockRestarted, machine.EventPrimaryLost, machine.EventGraceEnded, machine.EventRotationComplete} {
		if !strings.Contains(events, string(e)) {
			t.Errorf("history lacks %s: %s", e, events)
		}
	}
	waitFor(t, ns, "rot", time.Minute, "retire request removed", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Annotations[v1beta1.AnnotationRetireOldPasswords] == ""
	})
	if err := setAndWait(ctx, c, "after-retire:", 10, 2); err != nil {
		t.Fatalf("writes after the retirement not acknowledged by both replicas: %v", err)
	}
	newRepl := secretKey(t, vc, kube.KeyReplicationPassword)
	if newRepl == oldRepl {
		t.Fatal("the replication password was not rotated")
	}

	// The user changes the application password in their own Secret.
	var app corev1.Secret
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-pw"}, &app); err != nil {
		t.Fatal(err)
	}
	app.Data["password"] = []byte("second-password")
	if err := k.Update(ctx, &app); err != nil {
		t.Fatal(err)
	}
	rotationPhase(t, ns, "rot", machine.RotationPublished)
	// The machine records the phase before its action writes the Secret (transitions are
	// persisted before anything is touched): the Secret follows within a turn.
	published := ""
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if published = secretKey(t, vc, kube.KeyClientPassword); published == "second-password" {
			break
		}
	}
	if published != "second-password" {
		t.Errorf("published application password %q 30 s after the rotation was recorded published, want the user's new one", published)
	}
	for _, n := range get(t, ns, "rot").Status.Nodes {
		for _, pw := range []string{"first-password", "second-password"} {
			if c, err := userClient(n.IP, "default", pw); err != nil {
				t.Errorf("%s: within the grace period %s must work: %v", n.Pod, pw, err)
			} else {
				c.Close()
			}
		}
	}
	retireNow(t, ctx, ns, "rot")
	vc = rotated(t, ns, "rot", "default@existing-secret-")
	for _, n := range vc.Status.Nodes {
		if c, err := userClient(n.IP, "default", "first-password"); err == nil {
			c.Close()
			t.Errorf("%s: the old application password still works after the retirement", n.Pod)
		}
		if c, err := userClient(n.IP, "default", "second-password"); err != nil {
			t.Errorf("%s: the user's new application password: %v", n.Pod, err)
		} else {
			c.Close()
		}
	}
}
