package kube

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// A password rotation keeps its passwords in a Secret of its own (<cluster>-rotation), made
// before the machine records the rotation and emptied after it completed: the new passwords
// (next-<key>) and the ones they replace (previous-<key>), under the auth Secret's keys. It is
// what lets a rotation go on across operator restarts without the auth Secret, which clients
// read, holding a password a node refuses. Emptied, not deleted: the operator needs no right
// to delete Secrets (a right to delete every Secret in its reach), and the empty Secret goes
// with the cluster (its owner reference). Only a Secret the cluster owns is read: someone
// else's Secret of that name must not feed passwords to the nodes.

// Annotations on the auth Secret that say what it reflects of a rotation (PublishPasswords).
const (
	AnnotationRotation      = "valkey.fsm.dev/rotation"
	AnnotationRotationPhase = "valkey.fsm.dev/rotation-phase"
)

// Keys of the rotation Secret besides the passwords.
const (
	keyRotationID    = "id"
	keyRotationUsers = "users"
)

// RotationSecretName is the name of cluster vc's rotation Secret.
func RotationSecretName(vc *v1beta1.ValkeyCluster) string { return vc.Name + "-rotation" }

// keyOf is the auth Secret key of a user's password.
func keyOf(user string) string {
	switch user {
	case valkey.UserOperator:
		return KeyOperatorPassword
	case valkey.UserReplication:
		return KeyReplicationPassword
	default:
		return KeyClientPassword
	}
}

// LoadRotation reads the rotation Secret: nil when there is none, when it is empty (the
// rotation it held completed), and when the cluster does not own it.
func LoadRotation(ctx context.Context, c client.Reader, vc *v1beta1.ValkeyCluster) (*valkey.RotationPasswords, error) {
	var s corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: vc.Namespace, Name: RotationSecretName(vc)}, &s); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !ownedByCluster(vc, &s) || len(s.Data[keyRotationID]) == 0 {
		return nil, nil
	}
	r := &valkey.RotationPasswords{ID: string(s.Data[keyRotationID]), Users: strings.Split(string(s.Data[keyRotationUsers]), ",")}
	for _, u := range r.Users {
		next, prev := s.Data["next-"+keyOf(u)], s.Data["previous-"+keyOf(u)]
		if len(next) == 0 || len(prev) == 0 {
			return nil, fmt.Errorf("rotation Secret %s lacks the passwords of %s", s.Name, u)
		}
		r.Next.Set(u, string(next))
		r.Previous.Set(u, string(prev))
	}
	return r, nil
}

// PrepareRotation writes the rotation Secret for request id of users: their current passwords
// (current) as the previous ones, new ones generated, or, for the application user with
// spec.auth.passwordSecretRef, clientNext (the password the user put there). An existing Secret
// of the same request is kept as it is: its new passwords may be on nodes already.
func PrepareRotation(ctx context.Context, c client.Client, live client.Reader, vc *v1beta1.ValkeyCluster, owner metav1.OwnerReference, id string, users []string, current valkey.Passwords, clientNext string) (*valkey.RotationPasswords, error) {
	if r, err := LoadRotation(ctx, live, vc); err != nil || (r != nil && r.ID == id) {
		return r, err
	}
	data := map[string][]byte{keyRotationID: []byte(id), keyRotationUsers: []byte(strings.Join(users, ","))}
	for _, u := range users {
		next := randomPassword()
		if u == valkey.UserClient && clientNext != "" {
			next = clientNext
		}
		data["next-"+keyOf(u)] = []byte(next)
		data["previous-"+keyOf(u)] = []byte(valkey.Of(current, u))
	}
	s := corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: RotationSecretName(vc), Namespace: vc.Namespace, Labels: CommonLabels(vc), OwnerReferences: []metav1.OwnerReference{owner}},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
	var cur corev1.Secret
	err := live.Get(ctx, types.NamespacedName{Namespace: vc.Namespace, Name: s.Name}, &cur)
	switch {
	case apierrors.IsNotFound(err):
		err = c.Create(ctx, &s)
	case err == nil && !ownedBy(owner, &cur):
		return nil, fmt.Errorf("the rotation Secret %s exists and is %w", s.Name, ErrNotOurs)
	case err == nil:
		// The emptied Secret of an earlier rotation, or a request that was withdrawn before
		// the machine recorded it: none of its passwords reached a node.
		cur.Data = data
		err = c.Update(ctx, &cur)
	}
	if err != nil {
		return nil, err
	}
	return LoadRotation(ctx, live, vc)
}

// EmptyRotation removes the passwords of a completed or withdrawn rotation from the rotation
// Secret; the Secret stays, empty, until the next rotation or the cluster's deletion. A Secret
// of that name the cluster does not own is left alone.
func EmptyRotation(ctx context.Context, c client.Client, vc *v1beta1.ValkeyCluster) error {
	var s corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: vc.Namespace, Name: RotationSecretName(vc)}, &s); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !ownedByCluster(vc, &s) || len(s.Data) == 0 {
		return nil
	}
	s.Data = nil
	return c.Update(ctx, &s)
}

// ownedByCluster reports whether obj has an owner reference to vc (by UID: a re-created
// cluster of the same name is another owner).
func ownedByCluster(vc *v1beta1.ValkeyCluster, obj metav1.Object) bool {
	return vc.UID != "" && ownedBy(metav1.OwnerReference{UID: vc.UID}, obj)
}

// PasswordsObjectOf is what the auth Secret reflects of a rotation.
func PasswordsObjectOf(s *corev1.Secret) machine.PasswordsObject {
	return machine.PasswordsObject{Rotation: s.Annotations[AnnotationRotation], Phase: machine.RotationPhase(s.Annotations[AnnotationRotationPhase])}
}

// rotationView is what the auth Secret's keys and users' file hold for the rotation phase it
// reflects: in Adding the keys keep the previous passwords and the file accepts the new ones
// too; in Published the keys hold the new ones and the file accepts the previous ones too; in
// Retiring the keys hold the new ones only.
func rotationView(data map[string][]byte, on machine.PasswordsObject, r *valkey.RotationPasswords) (also valkey.Passwords) {
	if r == nil || on.Rotation != r.ID {
		return valkey.Passwords{}
	}
	for _, u := range r.Users {
		switch on.Phase {
		case machine.RotationAdding:
			data[keyOf(u)] = []byte(valkey.Of(r.Previous, u))
			also.Set(u, valkey.Of(r.Next, u))
		case machine.RotationPublished:
			data[keyOf(u)] = []byte(valkey.Of(r.Next, u))
			also.Set(u, valkey.Of(r.Previous, u))
		case machine.RotationRetiring:
			data[keyOf(u)] = []byte(valkey.Of(r.Next, u))
		}
	}
	return also
}
