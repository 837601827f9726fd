package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// aclMemory remembers, per cluster: the checks by ValkeyACL name, the accepted users
// (aclUsersKey) and, per node, the process and set it was given.
type aclMemory struct {
	checks nodeMemory[aclCheck]
	// accepted is each ValkeyACL's last accepted user: kept on the nodes while a later
	// generation is refused, so that a mistake in an edit does not lock its application out.
	accepted nodeMemory[valkey.ACLUser]
	users    nodeMemory[[]valkey.ACLUser]
	applied  nodeMemory[string]
}

const aclUsersKey = "users"

func (m *aclMemory) forget(cluster types.UID) {
	m.checks.forget(cluster)
	m.accepted.forget(cluster)
	m.users.forget(cluster)
	m.applied.forget(cluster)
}

// acceptedUsers is the set of users the last turn accepted, for the users' file.
func (m *aclMemory) acceptedUsers(cluster types.UID) []valkey.ACLUser {
	return m.users.get(cluster, aclUsersKey)
}

// usersHash identifies a set of users, passwords and rules included.
func usersHash(users []valkey.ACLUser) string {
	h := sha256.New()
	for _, u := range users {
		fmt.Fprintf(h, "%s %v %q %q\n", u.Name, u.Enabled, u.Hashes, u.Rules)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// applyACLs resolves the cluster's ValkeyACLs, applies the accepted set to every answering
// process that lacks it, and writes each ValkeyACL's status.
func (r *Reconciler) applyACLs(ctx context.Context, vc *v1beta1.ValkeyCluster, w *world) {
	acls, err := r.aclsOf(ctx, client.ObjectKeyFromObject(vc))
	if err != nil {
		logFrom(ctx).Info("listing ValkeyACLs failed; users are applied on a later turn", "error", err.Error())
		return
	}
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
	w.readsSecrets = w.readsSecrets || len(acls) > 0 // their password Secrets are the user's
	for _, a := range acls {
		if valkey.Reserved(a.Spec.User) {
			// The API refuses these names; a resource made before a name was reserved (the
			// probe's user came later) must not take the operator's user over.
			checks[a.Name] = aclCheck{generation: a.Generation, rulesRefusal: fmt.Sprintf("user %s is one of the operator's own users: choose another name", a.Spec.User)}
			continue
		}
		ch := r.checkACL(ctx, vc, w, &a)
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
			r.acls.accepted.set(vc.UID, a.Name, ch.user)
		} else if last, ok := r.acls.accepted.lookup(vc.UID, a.Name); ok && last.Name == a.Spec.User && holder[a.Spec.User] == "" && file.fits(last) {
			holder[a.Spec.User] = a.Name
			users = append(users, last)
			file.add(last)
			ch.rulesRefusal = ch.refusal() + "; the nodes keep the user as last accepted"
			ch.secretRefusal = ""
		}
		checks[a.Name] = ch
	}
	sort.Slice(users, func(i, j int) bool { return users[i].Name < users[j].Name })
	r.acls.users.set(vc.UID, aclUsersKey, users)

	// The probe's user goes to every node with them (the users' file has it already): nodes
	// started by an older operator get it, and a probe password put back after it was lost
	// reaches the nodes that run.
	live := users
	if w.passwords.Probe != "" {
		live = append([]valkey.ACLUser{valkey.ProbeUser(w.passwords.Probe)}, users...)
	}
	hash := usersHash(live)
	applied, nodes := 0, 0
	var failed []string
	for _, n := range w.obs.Nodes {
		ip := answeringIP(w, n)
		if ip == "" {
			continue
		}
		nodes++
		key := n.Valkey.RunID + "/" + hash
		if r.acls.applied.get(vc.UID, n.Name) == key {
			applied++
			continue
		}
		deleted, err := w.pool.ApplyACLs(ctx, ip, live)
		if err != nil {
			failed = append(failed, n.Name+": "+err.Error())
			continue
		}
		r.acls.applied.set(vc.UID, n.Name, key)
		applied++
		if len(deleted) > 0 {
			logFrom(ctx).Info("users no ValkeyACL asks for deleted", "pod", n.Name, "users", deleted)
		}
	}
	if len(failed) > 0 {
		r.event(vc, corev1.EventTypeWarning, "ACLApplyFailed", "ValkeyACL users not applied: %s (tried again next turn)", strings.Join(failed, "; "))
	}
	for i := range acls {
		r.writeACLStatus(ctx, &acls[i], checks[acls[i].Name], applied, nodes, strings.Join(failed, "; "))
	}
}

// checkACL resolves one ValkeyACL: its passwords (read again after aclSecretsTTL) and, once per
// generation, Valkey's judgement of its rules. A check that could not run (no node answers) is
// not remembered.
func (r *Reconciler) checkACL(ctx context.Context, vc *v1beta1.ValkeyCluster, w *world, a *v1beta1.ValkeyACL) aclCheck {
	old, found := r.acls.checks.lookup(vc.UID, a.Name)
	judged := found && old.generation == a.Generation
	if judged && r.now().Sub(old.read) < aclSecretsTTL {
		return old
	}
	ch := aclCheck{generation: a.Generation, read: r.now()}
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
		if err := r.apiReader().Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: ref.Name}, &sec); err != nil {
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
		r.acls.checks.set(vc.UID, a.Name, ch)
		return ch
	}
	var ip string
	for _, n := range w.obs.Nodes {
		if ip = answeringIP(w, n); ip != "" {
			break
		}
	}
	if ip == "" {
		ch.rulesRefusal = "no node answers to check the rules on yet"
		return ch
	}
	admin, err := w.pool.CheckACL(ctx, ip, ch.user)
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
	r.acls.checks.set(vc.UID, a.Name, ch)
	return ch
}

// writeACLStatus writes a ValkeyACL's status when it changed, with an Event when its phase
// does.
func (r *Reconciler) writeACLStatus(ctx context.Context, a *v1beta1.ValkeyACL, ch aclCheck, applied, nodes int, failed string) {
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
	before, written := r.setACLStatus(ctx, a, st)
	if written && (st.Phase != before.Phase || st.Reason != before.Reason) {
		switch st.Phase {
		case aclRefused:
			r.Recorder.Eventf(a, nil, corev1.EventTypeWarning, "ACLRefused", "ACLRefused", "user %s not applied: %s; the other users keep working", a.Spec.User, st.Reason)
		case aclApplied:
			r.Recorder.Eventf(a, nil, corev1.EventTypeNormal, "ACLApplied", "ACLApplied", "user %s applied to %s node(s)", a.Spec.User, st.Applied)
		}
	}
}

// aclsWithoutCluster marks the ValkeyACLs that name a cluster that does not exist Pending, with
// that reason (otherwise they would have no status at all).
func (r *Reconciler) aclsWithoutCluster(ctx context.Context, cluster types.NamespacedName) {
	acls, err := r.aclsOf(ctx, cluster)
	if err != nil {
		return
	}
	for i := range acls {
		r.setACLStatus(ctx, &acls[i], v1beta1.ValkeyACLStatus{ObservedGeneration: acls[i].Generation, Phase: aclPending,
			Reason: fmt.Sprintf("ValkeyCluster %s is not found in namespace %s: the user is applied once it exists", cluster.Name, cluster.Namespace)})
	}
}

// aclsOf lists the ValkeyACLs that name cluster and are not being deleted.
func (r *Reconciler) aclsOf(ctx context.Context, cluster types.NamespacedName) ([]v1beta1.ValkeyACL, error) {
	var list v1beta1.ValkeyACLList
	if err := r.Client.List(ctx, &list, client.InNamespace(cluster.Namespace)); err != nil {
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
func (r *Reconciler) setACLStatus(ctx context.Context, a *v1beta1.ValkeyACL, st v1beta1.ValkeyACLStatus) (v1beta1.ValkeyACLStatus, bool) {
	before := a.Status
	setACLReady(&st, before.Conditions, a.Generation, r.now())
	if equality.Semantic.DeepEqual(st, before) {
		return before, false
	}
	orig := a.DeepCopy()
	a.Status = st
	if err := r.Client.Status().Patch(ctx, a, client.MergeFrom(orig)); err != nil {
		logFrom(ctx).Info("ValkeyACL status not written; next turn", "acl", a.Name, "error", err.Error())
		return before, false
	}
	return before, true
}

// aclToCluster maps a ValkeyACL to its cluster.
func aclToCluster(_ context.Context, o client.Object) []ctrl.Request {
	a, ok := o.(*v1beta1.ValkeyACL)
	if !ok || a.Spec.Cluster == "" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: a.Namespace, Name: a.Spec.Cluster}}}
}
