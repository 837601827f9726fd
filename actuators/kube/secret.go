package kube

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// Keys of the auth Secret.
const (
	KeyOperatorPassword    = "operator-password"
	KeyClientPassword      = "password"
	KeyReplicationPassword = "replication-password"
	// KeyProbePassword is the readiness probe's user's password (valkey.UserProbe), mounted
	// into the pods beside the users' file for the probe to read when it runs.
	KeyProbePassword = "probe-password"
	// KeySentinelPassword is the sentinels' user's password (valkey.UserSentinel), in the
	// Sentinel topology only.
	KeySentinelPassword = "sentinel-password"
)

// ErrAuthLost is EnsureAuth's refusal to make new passwords for a cluster whose pods may run
// with the old ones: running nodes would refuse them (the operator locked out, replicas unable
// to sync), and nothing the operator could do would bring the old ones back.
var ErrAuthLost = errors.New("auth Secret lost")

// ErrExistingSecret is a spec.auth.passwordSecretRef the operator cannot take the application
// password from: the Secret is missing, or has no password under the key. It is the user's
// to fix (the message says what to create or change); until then the cluster waits.
var ErrExistingSecret = errors.New("spec.auth.passwordSecretRef unusable")

// AuthInputs is what the auth Secret is made from besides the cluster and its own content.
type AuthInputs struct {
	// Remembered are the passwords this operator process saw last (put back when lost).
	Remembered valkey.Passwords
	// Users are the accepted ValkeyACL users, written into the users' file.
	Users []valkey.ACLUser
	// Rotation is the prepared password rotation (nil: none): the keys and the users' file
	// follow the phase of it the Secret reflects.
	Rotation *valkey.RotationPasswords
	// Publish makes the Secret reflect that rotation phase (the PublishPasswords action).
	Publish *machine.PasswordsObject
}

// AuthResult is what EnsureAuth found and wrote.
type AuthResult struct {
	Passwords valkey.Passwords
	// Restored names the passwords put back from memory.
	Restored []string
	// Published is what the Secret reflects of a rotation.
	Published machine.PasswordsObject
	// ExistingSecretErr says why spec.auth.passwordSecretRef is unusable now (ErrExistingSecret)
	// while the cluster already runs with an application password: that one is kept, and the
	// cluster goes on (failover included) while the user puts the Secret back.
	ExistingSecretErr error
	// ClientChanged is the password spec.auth.passwordSecretRef holds when it differs from the
	// one the cluster uses: the change is a rotation to it, never a rewrite of the Secret
	// before every node accepts it ("" when unchanged).
	ClientChanged string
}

// EnsureAuth makes sure the cluster's auth Secret exists and is current, and returns the
// passwords. Generated passwords are made once and kept: a new one would lock the operator
// and the replicas out of running nodes. When the Secret (or a password in it) is gone, the
// passwords this operator process still remembers (remembered, from earlier turns) are put
// back (restored reports it); when it remembers none and the StatefulSet exists (its pods may
// run with the old passwords), nothing is generated: ErrAuthLost says what to do. The client
// password comes from spec.auth's existing Secret when one is named, is generated otherwise,
// and is empty when auth is off. users (ValkeyACL users) are written into the users' file after
// the operator's own. c may see only the operator's own objects (a filtered cache);
// live reads the API server: the user's existing Secret, and an auth Secret in the way.
func EnsureAuth(ctx context.Context, c client.Client, live client.Reader, vc *v1beta1.ValkeyCluster, owner metav1.OwnerReference, in AuthInputs) (res AuthResult, err error) {
	remembered := in.Remembered
	names := NamesOf(vc)
	var s corev1.Secret
	err = c.Get(ctx, types.NamespacedName{Namespace: vc.Namespace, Name: names.Auth}, &s)
	if err != nil && !apierrors.IsNotFound(err) {
		return AuthResult{}, err
	}
	exists := err == nil
	if !exists {
		// Not in the cache: either gone, or someone else's (no operator labels).
		if err = live.Get(ctx, types.NamespacedName{Namespace: vc.Namespace, Name: names.Auth}, &s); err != nil && !apierrors.IsNotFound(err) {
			return AuthResult{}, err
		}
		exists = err == nil
	}
	if exists && !ownedBy(owner, &s) {
		return AuthResult{}, fmt.Errorf("the auth Secret %s exists and is %w (no owner reference to it): rename the cluster or remove that Secret; the operator does not take over objects it did not create", names.Auth, ErrNotOurs)
	}
	data := map[string][]byte{}
	for k, v := range s.Data {
		data[k] = v
	}
	generated := []struct {
		key        string
		remembered string
	}{{KeyOperatorPassword, remembered.Operator}, {KeyReplicationPassword, remembered.Replication}}
	if AuthEnabled(vc) && vc.Spec.Auth.PasswordSecretRef == nil {
		generated = append(generated, struct {
			key        string
			remembered string
		}{KeyClientPassword, remembered.Client})
	}
	if vc.Spec.Topology == v1beta1.TopologySentinel {
		// Made with the cluster, lost like the others: the sentinels' files hold it.
		generated = append(generated, struct {
			key        string
			remembered string
		}{KeySentinelPassword, remembered.Sentinel})
	}
	var lost []string
	for _, g := range generated {
		switch {
		case len(data[g.key]) > 0:
		case g.remembered != "":
			data[g.key] = []byte(g.remembered)
			res.Restored = append(res.Restored, g.key)
		default:
			lost = append(lost, g.key)
		}
	}
	if len(lost) > 0 {
		// From the API server, not the cache: a StatefulSet that lost its labels is out of
		// the cache, and its pods still run with the old passwords.
		// Shard 0's StatefulSet stands for all (in a Cluster topology it is never removed).
		var sts appsv1.StatefulSet
		err := live.Get(ctx, types.NamespacedName{Namespace: vc.Namespace, Name: names.ShardSet(0)}, &sts)
		if err == nil && !ownedBy(owner, &sts) {
			// Someone else's StatefulSet of that name runs none of this cluster's pods.
			err = apierrors.NewNotFound(appsv1.Resource("statefulsets"), names.ShardSet(0))
		}
		switch {
		case err == nil:
			return AuthResult{}, fmt.Errorf("%w: %s of Secret %s/%s missing while the cluster's pods may run with it, and this operator process does not remember it; "+
				"put the Secret back (from a backup, or kubectl get secret -o yaml saved earlier), or, accepting new passwords, delete the StatefulSet %s (the claims and the data stay) so that every pod starts with new ones",
				ErrAuthLost, strings.Join(lost, ", "), vc.Namespace, names.Auth, names.ShardSet(0))
		case !apierrors.IsNotFound(err):
			return AuthResult{}, err
		}
		for _, k := range lost {
			data[k] = []byte(randomPassword())
		}
	}
	// The probe's password is put back from memory when lost, and made otherwise: also for a
	// cluster made by an older operator, whose Secret never had one and whose pods (started
	// with the older template, a roll away from the new one) do not use it. Unlike the others
	// it may be made while pods run: it opens PING only, and the probe user is given to every
	// running node live with the ValkeyACL users, so a new one never locks the operator or an
	// application out.
	if len(data[KeyProbePassword]) == 0 {
		if remembered.Probe != "" {
			data[KeyProbePassword] = []byte(remembered.Probe)
			res.Restored = append(res.Restored, KeyProbePassword)
		} else {
			data[KeyProbePassword] = []byte(randomPassword())
		}
	}
	client, err := clientPassword(ctx, live, vc, data[KeyClientPassword])
	switch {
	case errors.Is(err, ErrExistingSecret) && exists && len(data[KeyClientPassword]) > 0:
		// Deleted or emptied under a running cluster: its nodes check the password the auth
		// Secret holds, which stays; stopping the cluster's turns would stop its failovers.
		res.ExistingSecretErr = err
		client = string(data[KeyClientPassword])
	case err != nil:
		return AuthResult{}, err
	}
	if cur := string(data[KeyClientPassword]); cur != "" && client != cur && vc.Spec.Auth.PasswordSecretRef != nil && AuthEnabled(vc) {
		res.ClientChanged = client
	} else {
		data[KeyClientPassword] = []byte(client)
	}
	published := PasswordsObjectOf(&s)
	if in.Publish != nil {
		published = *in.Publish
	}
	also := rotationView(data, published, in.Rotation)
	res.Published = published
	pw := valkey.Passwords{Operator: string(data[KeyOperatorPassword]), Client: string(data[KeyClientPassword]), Replication: string(data[KeyReplicationPassword]),
		Probe: string(data[KeyProbePassword]), Sentinel: string(data[KeySentinelPassword])}
	res.Passwords = pw
	data[valkey.AuthFileKey] = []byte(valkey.AuthConfigAccepting(pw, also, in.Users...))
	if pw.Sentinel != "" {
		data[valkey.SentinelTemplateKey] = []byte(valkey.SentinelConfig(pw))
	}
	desired := corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: names.Auth, Namespace: vc.Namespace, Labels: CommonLabels(vc), OwnerReferences: []metav1.OwnerReference{owner}},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
	if published.Rotation != "" {
		desired.Annotations = map[string]string{AnnotationRotation: published.Rotation, AnnotationRotationPhase: string(published.Phase)}
	}
	if exists && sameData(s.Data, data) && labelsAndOwners(&desired, &s) && PasswordsObjectOf(&s) == published {
		return res, nil
	}
	if !exists {
		return res, c.Create(ctx, &desired)
	}
	s.Data = data
	// Labels back too: a Secret found only past the cache has lost them.
	mergeMeta(&desired, &s)
	if published.Rotation != "" {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[AnnotationRotation], s.Annotations[AnnotationRotationPhase] = published.Rotation, string(published.Phase)
	}
	return res, c.Update(ctx, &s)
}

func clientPassword(ctx context.Context, c client.Reader, vc *v1beta1.ValkeyCluster, current []byte) (string, error) {
	if !AuthEnabled(vc) {
		return "", nil
	}
	ref := vc.Spec.Auth.PasswordSecretRef
	if ref == nil {
		if len(current) > 0 {
			return string(current), nil
		}
		return randomPassword(), nil
	}
	key := ref.Key
	if key == "" {
		key = v1beta1.DefaultSecretKey
	}
	var s corev1.Secret
	err := c.Get(ctx, types.NamespacedName{Namespace: vc.Namespace, Name: ref.Name}, &s)
	switch {
	case apierrors.IsNotFound(err):
		return "", fmt.Errorf("%w: Secret %s/%s does not exist: create it with the application password under key %q "+
			"(kubectl create secret generic %s -n %s --from-literal=%s=...), or name an existing Secret in spec.auth.passwordSecretRef",
			ErrExistingSecret, vc.Namespace, ref.Name, key, ref.Name, vc.Namespace, key)
	case err != nil:
		return "", fmt.Errorf("spec.auth.passwordSecretRef %s: %w", ref.Name, err)
	}
	v := s.Data[key]
	if len(v) == 0 {
		return "", fmt.Errorf("%w: Secret %s/%s has no password under key %q: add it, or set spec.auth.passwordSecretRef.key to the key that holds it",
			ErrExistingSecret, vc.Namespace, ref.Name, key)
	}
	return string(v), nil
}

// AuthEnabled is spec.auth.enabled with its default (on).
func AuthEnabled(vc *v1beta1.ValkeyCluster) bool {
	return v1beta1.AuthEnabled(&vc.Spec)
}

func sameData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if string(b[k]) != string(v) {
			return false
		}
	}
	return true
}

func randomPassword() string {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}
