package users

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// ValkeyACL users are carried out beside the machine, like live configuration: they change no
// node's role or data and are no fence. Each turn the cluster's ValkeyACLs are resolved
// (passwords read from their Secrets), their rules judged by Valkey itself on a scratch user
// (valkey.CheckACL, once per generation), and every answering process that has not got the
// current set gets it (valkey.ApplyACLs: set from nothing, users no resource asks for deleted).
// The accepted set also goes into the users' file of the auth Secret (kube.EnsureAuth), which
// restarted and new pods start from.

// aclCheck is one ValkeyACL resolved: its user, or why it is refused. Valkey's judgement of
// the rules is kept per generation; the passwords are read again after aclSecretsTTL.
type aclCheck struct {
	// generation is the one Valkey judged the rules of (rulesRefusal: what it said).
	generation   int64
	rulesRefusal string
	// read is when the password Secrets were read (secretRefusal: what was wrong).
	read          time.Time
	secretRefusal string
	user          valkey.ACLUser
}

func (c aclCheck) refusal() string {
	if c.rulesRefusal != "" {
		return c.rulesRefusal
	}
	return c.secretRefusal
}

// aclSecretsTTL bounds how long a password read from a Secret is used before it is read again.
const aclSecretsTTL = 30 * time.Second

// +kubebuilder:rbac:groups=valkey.fsm.dev,resources=valkeyacls,verbs=list;watch
// +kubebuilder:rbac:groups=valkey.fsm.dev,resources=valkeyacls/status,verbs=patch

// Users applies each cluster's ValkeyACL users and writes the ValkeyACLs' status. The cluster
// controller calls it from every turn (Apply) and when a cluster is gone (WithoutCluster,
// Forget); it remembers, per cluster and in memory only, what it judged and gave each node.
type Users struct {
	// Client reads the ValkeyACLs from the manager's cache and writes their status; APIReader
	// reads the password Secrets, which are the user's, from the API server (nil: Client).
	Client    client.Client
	APIReader client.Reader
	// Recorder writes the Events about the ValkeyACLs and their clusters.
	Recorder events.EventRecorder
	// Now is the clock (tests may stop it); time.Now by default.
	Now func() time.Time

	mu       sync.Mutex
	clusters map[types.UID]*memory
}

// memory is what Users remembers of one cluster: the checks by ValkeyACL name, each
// ValkeyACL's last accepted user (kept on the nodes while a later generation is refused, so
// that a mistake in an edit does not lock its application out), the accepted set, and per
// node the process and set it was given. A cluster's turns never run at once, so only the map
// of clusters is locked.
type memory struct {
	checks   map[string]aclCheck
	accepted map[string]valkey.ACLUser
	users    []valkey.ACLUser
	applied  map[string]string
}

// of is the memory of cluster, made on first use.
func (u *Users) of(cluster types.UID) *memory {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.clusters == nil {
		u.clusters = map[types.UID]*memory{}
	}
	m := u.clusters[cluster]
	if m == nil {
		m = &memory{checks: map[string]aclCheck{}, accepted: map[string]valkey.ACLUser{}, applied: map[string]string{}}
		u.clusters[cluster] = m
	}
	return m
}

// Forget lets go of everything remembered of a deleted cluster.
func (u *Users) Forget(cluster types.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.clusters, cluster)
}

// Remembers says whether anything of cluster is remembered (a deleted cluster's memory must go
// with it).
func (u *Users) Remembers(cluster types.UID) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	_, ok := u.clusters[cluster]
	return ok
}

// Accepted is the set of users the cluster's last turn accepted, for the users' file of its
// auth Secret (nil: none, or no turn applied users yet).
func (u *Users) Accepted(cluster types.UID) []valkey.ACLUser {
	u.mu.Lock()
	defer u.mu.Unlock()
	if m := u.clusters[cluster]; m != nil {
		return m.users
	}
	return nil
}

func (u *Users) now() time.Time {
	if u.Now != nil {
		return u.Now()
	}
	return time.Now()
}

// apiReader reads past the cache.
func (u *Users) apiReader() client.Reader {
	if u.APIReader != nil {
		return u.APIReader
	}
	return u.Client
}

// Turn is what a cluster's turn lends the users: the cluster, its nodes as the turn saw them,
// a connection to them, and the probe's password (the probe's user goes with the others).
type Turn struct {
	Cluster       *v1beta1.ValkeyCluster
	Nodes         []Node
	Pool          *valkey.Pool
	ProbePassword string
}

// Node is one node of a turn: the process that answered, and where (IP "": it does not answer,
// or is loading, and is given nothing).
type Node struct {
	Name, RunID, IP string
}

// usersHash identifies a set of users, passwords and rules included.
func usersHash(users []valkey.ACLUser) string {
	h := sha256.New()
	for _, u := range users {
		fmt.Fprintf(h, "%s %v %q %q\n", u.Name, u.Enabled, u.Hashes, u.Rules)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Apply resolves the cluster's ValkeyACLs, applies the accepted set to every answering
// process that lacks it, and writes each ValkeyACL's status. It says whether any ValkeyACL
// names the cluster: their password Secrets are the user's, whose changes no watch reports.
func (u *Users) Apply(ctx context.Context, t Turn) (readsSecrets bool) {
	vc := t.Cluster
	acls, err := u.aclsOf(ctx, client.ObjectKeyFromObject(vc))
	if err != nil {
		logFrom(ctx).Info("listing ValkeyACLs failed; users are applied on a later turn", "error", err.Error())
		return false
	}
	m := u.of(vc.UID)
	// The oldest resource of a user name holds it; a later one is refused.
	sort.Slice(acls, func(i, j int) bool {
		if !acls[i].CreationTimestamp.Equal(&acls[j].CreationTimestamp) {
			return acls[i].CreationTimestamp.Before(&acls[j].CreationTimestamp)
		}
		return acls[i].Name < acls[j].Name
	})
	holder := map[string]string{}
	checks := map[string]aclCheck{}
	var file usersFile
	var users []valkey.ACLUser
	for _, a := range acls {
		if valkey.Reserved(a.Spec.User) {
			// The API refuses these names; a resource made before a name was reserved (the
			// probe's user came later) must not take the operator's user over.
			checks[a.Name] = aclCheck{generation: a.Generation, rulesRefusal: fmt.Sprintf("user %s is one of the operator's own users: choose another name", a.Spec.User)}
			continue
		}
		ch := u.checkACL(ctx, t, m, &a)
		if owner, taken := holder[a.Spec.User]; taken && ch.refusal() == "" {
			ch.rulesRefusal = fmt.Sprintf("user %s is defined by ValkeyACL %s already", a.Spec.User, owner)
		}
		if ch.refusal() == "" && !file.fits(ch.user) {
			ch.rulesRefusal = file.overflow(ch.user)
		}
		if ch.refusal() == "" {
			holder[a.Spec.User] = a.Name
			users = append(users, ch.user)
			file.add(ch.user)
			m.accepted[a.Name] = ch.user
		} else if last, ok := m.accepted[a.Name]; ok && last.Name == a.Spec.User && holder[a.Spec.User] == "" && file.fits(last) {
			holder[a.Spec.User] = a.Name
			users = append(users, last)
			file.add(last)
			ch.rulesRefusal = ch.refusal() + "; the nodes keep the user as last accepted"
			ch.secretRefusal = ""
		}
		checks[a.Name] = ch
	}
	sort.Slice(users, func(i, j int) bool { return users[i].Name < users[j].Name })
	u.mu.Lock()
	m.users = users
	u.mu.Unlock()

	// The probe's user goes to every node with them (the users' file has it already): nodes
	// started by an older operator get it, and a probe password put back after it was lost
	// reaches the nodes that run.
	live := users
	if t.ProbePassword != "" {
		live = append([]valkey.ACLUser{valkey.ProbeUser(t.ProbePassword)}, users...)
	}
	hash := usersHash(live)
	applied, nodes := 0, 0
	var failed []string
	for _, n := range t.Nodes {
		ip := n.IP
		if ip == "" {
			continue
		}
		nodes++
		key := n.RunID + "/" + hash
		if m.applied[n.Name] == key {
			applied++
			continue
		}
		deleted, err := t.Pool.ApplyACLs(ctx, ip, live)
		if err != nil {
			failed = append(failed, n.Name+": "+err.Error())
			continue
		}
		m.applied[n.Name] = key
		applied++
		if len(deleted) > 0 {
			logFrom(ctx).Info("users no ValkeyACL asks for deleted", "pod", n.Name, "users", deleted)
		}
	}
	if len(failed) > 0 {
		u.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, "ACLApplyFailed", "ACLApplyFailed", "ValkeyACL users not applied: %s (tried again next turn)", strings.Join(failed, "; "))
	}
	for i := range acls {
		u.writeACLStatus(ctx, &acls[i], checks[acls[i].Name], applied, nodes, strings.Join(failed, "; "))
	}
	return len(acls) > 0
}

// checkACL resolves one ValkeyACL: its passwords (read again after aclSecretsTTL) and, once per
// generation, Valkey's judgement of its rules. A check that could not run (no node answers) is
// not remembered.
func (u *Users) checkACL(ctx context.Context, t Turn, m *memory, a *v1beta1.ValkeyACL) aclCheck {
	old, found := m.checks[a.Name]
	judged := found && old.generation == a.Generation
	if judged && u.now().Sub(old.read) < aclSecretsTTL {
		return old
	}
	ch := aclCheck{generation: a.Generation, read: u.now()}
	enabled := a.Spec.Enabled == nil || *a.Spec.Enabled
	ch.user = valkey.ACLUser{Name: a.Spec.User, Enabled: enabled}
	for _, rule := range a.Spec.Rules {
		ch.user.Rules = append(ch.user.Rules, string(rule))
	}
	for _, ref := range a.Spec.PasswordSecretRefs {
		key := ref.Key
		if key == "" {
			key = "password"
		}
		var sec corev1.Secret
		if err := u.apiReader().Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: ref.Name}, &sec); err != nil {
			ch.secretRefusal = fmt.Sprintf("password Secret %s: %v", ref.Name, err)
			break
		}
		if len(sec.Data[key]) == 0 {
			ch.secretRefusal = fmt.Sprintf("password Secret %s has no key %s (or it is empty)", ref.Name, key)
			break
		}
		ch.user.Hashes = append(ch.user.Hashes, valkey.PasswordRule(string(sec.Data[key])))
	}
	if judged {
		ch.rulesRefusal = old.rulesRefusal
		m.checks[a.Name] = ch
		return ch
	}
	var ip string
	for _, n := range t.Nodes {
		if ip = n.IP; ip != "" {
			break
		}
	}
	if ip == "" {
		ch.rulesRefusal = "no node answers to check the rules on yet"
		return ch
	}
	admin, err := t.Pool.CheckACL(ctx, ip, ch.user)
	var refused *valkey.RulesRefused
	switch {
	case errors.As(err, &refused):
		ch.rulesRefusal = refused.Reason
	case err != nil:
		// The node or the network, not the rules: judged again next turn.
		ch.rulesRefusal = "the rules could not be checked yet: " + err.Error()
		return ch
	case len(admin) > 0 && !a.Spec.AllowAdmin:
		ch.rulesRefusal = fmt.Sprintf("the rules grant administrative commands (%s): set spec.allowAdmin to true if this user must have them (docs/security.md)", strings.Join(admin, ", "))
	}
	m.checks[a.Name] = ch
	return ch
}

// writeACLStatus writes a ValkeyACL's status when it changed, with an Event when its phase
// does.
func (u *Users) writeACLStatus(ctx context.Context, a *v1beta1.ValkeyACL, ch aclCheck, applied, nodes int, failed string) {
	st := v1beta1.ValkeyACLStatus{ObservedGeneration: a.Generation}
	switch {
	case ch.refusal() != "":
		st.Phase, st.Reason = aclRefused, ch.refusal()
	case nodes == 0:
		st.Phase, st.Reason = aclPending, "no node of the cluster answers yet"
	case applied < nodes:
		st.Phase, st.Reason = aclPending, failed
	default:
		st.Phase = aclApplied
	}
	if ch.refusal() == "" {
		st.Applied = fmt.Sprintf("%d/%d", applied, nodes)
	}
	before, written := u.setACLStatus(ctx, a, st)
	if written && (st.Phase != before.Phase || st.Reason != before.Reason) {
		switch st.Phase {
		case aclRefused:
			u.Recorder.Eventf(a, nil, corev1.EventTypeWarning, "ACLRefused", "ACLRefused", "user %s not applied: %s; the other users keep working", a.Spec.User, st.Reason)
		case aclApplied:
			u.Recorder.Eventf(a, nil, corev1.EventTypeNormal, "ACLApplied", "ACLApplied", "user %s applied to %s node(s)", a.Spec.User, st.Applied)
		}
	}
}

// WithoutCluster marks the ValkeyACLs that name a cluster that does not exist Pending, with
// that reason (otherwise they would have no status at all).
func (u *Users) WithoutCluster(ctx context.Context, cluster types.NamespacedName) {
	acls, err := u.aclsOf(ctx, cluster)
	if err != nil {
		return
	}
	for i := range acls {
		u.setACLStatus(ctx, &acls[i], v1beta1.ValkeyACLStatus{ObservedGeneration: acls[i].Generation, Phase: aclPending,
			Reason: fmt.Sprintf("ValkeyCluster %s is not found in namespace %s: the user is applied once it exists", cluster.Name, cluster.Namespace)})
	}
}

// aclsOf lists the ValkeyACLs that name cluster and are not being deleted.
func (u *Users) aclsOf(ctx context.Context, cluster types.NamespacedName) ([]v1beta1.ValkeyACL, error) {
	var list v1beta1.ValkeyACLList
	if err := u.Client.List(ctx, &list, client.InNamespace(cluster.Namespace)); err != nil {
		return nil, err
	}
	var out []v1beta1.ValkeyACL
	for _, a := range list.Items {
		if a.Spec.Cluster == cluster.Name && a.DeletionTimestamp.IsZero() {
			out = append(out, a)
		}
	}
	return out, nil
}

// setACLStatus writes st as a's status when it differs from it; it returns the status before and
// whether it wrote (a refused write is logged and tried again on the next turn).
func (u *Users) setACLStatus(ctx context.Context, a *v1beta1.ValkeyACL, st v1beta1.ValkeyACLStatus) (v1beta1.ValkeyACLStatus, bool) {
	before := a.Status
	setACLReady(&st, before.Conditions, a.Generation, u.now())
	if equality.Semantic.DeepEqual(st, before) {
		return before, false
	}
	orig := a.DeepCopy()
	a.Status = st
	if err := u.Client.Status().Patch(ctx, a, client.MergeFrom(orig)); err != nil {
		logFrom(ctx).Info("ValkeyACL status not written; next turn", "acl", a.Name, "error", err.Error())
		return before, false
	}
	return before, true
}

// ToCluster maps a ValkeyACL to its cluster (the cluster controller watches ValkeyACLs with it).
func ToCluster(_ context.Context, o client.Object) []ctrl.Request {
	a, ok := o.(*v1beta1.ValkeyACL)
	if !ok || a.Spec.Cluster == "" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: a.Namespace, Name: a.Spec.Cluster}}}
}

func logFrom(ctx context.Context) logr.Logger { return log.FromContext(ctx) }
