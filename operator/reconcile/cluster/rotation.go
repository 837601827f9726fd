package cluster

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// Password rotation, the operator's side (the steps are the machine's: machine/rotation.go).
// A request comes from the rotate-passwords annotation, or from a new password in
// spec.auth.passwordSecretRef (a rotation of the application user to it). Before the machine can
// record it the operator prepares the rotation Secret (kube.PrepareRotation): the new
// passwords exist durably before any node is given one. While a rotation is recorded, each
// turn compares every answering node's passwords with the rotation's (Valkey.Passwords).

// errNoRotation refuses a password action whose rotation is not the one prepared.
var errNoRotation = errors.New("not the prepared rotation")

// rotationUsers parses the users of a rotate-passwords value ("default,operator@...", "all").
func rotationUsers(value string, vc *v1beta1.ValkeyCluster) ([]string, error) {
	list, _, _ := strings.Cut(value, "@")
	var users []string
	seen := map[string]bool{}
	for _, u := range strings.Split(list, ",") {
		u = strings.TrimSpace(u)
		var add []string
		switch u {
		case "all":
			add = []string{valkey.UserOperator, valkey.UserReplication}
			if kube.AuthEnabled(vc) && vc.Spec.Auth.PasswordSecretRef == nil {
				add = append(add, valkey.UserClient)
			}
		case valkey.UserClient:
			if !kube.AuthEnabled(vc) {
				return nil, fmt.Errorf("the application user has no password (spec.auth.enabled is false)")
			}
			if ref := vc.Spec.Auth.PasswordSecretRef; ref != nil {
				return nil, fmt.Errorf("the application password comes from Secret %s: put the new password there and the operator rotates to it", ref.Name)
			}
			add = []string{u}
		case valkey.UserOperator, valkey.UserReplication:
			add = []string{u}
		default:
			return nil, fmt.Errorf("%q is not a user whose password the operator manages (default, operator, replication or all); a ValkeyACL user is rotated by listing a second Secret in its passwordSecretRefs, then removing the first", u)
		}
		for _, a := range add {
			if !seen[a] {
				seen[a] = true
				users = append(users, a)
			}
		}
	}
	return users, nil
}

// rotationRequest reads the rotation asked for (annotation, or a changed passwordSecretRef) and
// prepares its Secret when the machine can record it, answers the annotations the operator
// removes (a recorded or refused request, a retire request with nothing to retire), and
// returns the machine's request, the rotation whose passwords apply (prepared), and
// RetireNow. clientChanged is EnsureAuth's ClientChanged.
func (r *Reconciler) rotationRequest(ctx context.Context, vc *v1beta1.ValkeyCluster, p machine.Persisted, current valkey.Passwords, clientChanged string, prepared *valkey.RotationPasswords) (*machine.RotationRequest, *valkey.RotationPasswords, bool, error) {
	var req *machine.RotationRequest
	if v := vc.Annotations[v1beta1.AnnotationRotatePasswords]; v != "" {
		users, err := rotationUsers(v, vc)
		switch {
		case err != nil:
			r.event(vc, corev1.EventTypeWarning, "RotationRefused", "%s=%s: %v", v1beta1.AnnotationRotatePasswords, v, err)
			return nil, prepared, false, r.setAnnotation(ctx, vc, v1beta1.AnnotationRotatePasswords, "", "rotate-annotation")
		case p.Rotation.ID == v || p.Rotated == v:
			// Recorded (the status says so): the machine carries it on from its record.
			if err := r.setAnnotation(ctx, vc, v1beta1.AnnotationRotatePasswords, "", "rotate-annotation"); err != nil {
				return nil, prepared, false, err
			}
		default:
			req = &machine.RotationRequest{ID: v, Users: users}
		}
	}
	if req == nil && clientChanged != "" {
		// The ID names the new password without revealing it: an HMAC under the operator's
		// password, which status readers do not have.
		mac := hmac.New(sha256.New, []byte(current.Operator))
		mac.Write([]byte(clientChanged))
		req = &machine.RotationRequest{ID: valkey.UserClient + "@existing-secret-" + hex.EncodeToString(mac.Sum(nil))[:12], Users: []string{valkey.UserClient}}
	}
	if req != nil && p.Rotation.ID == "" && req.ID != p.Rotated && (prepared == nil || prepared.ID != req.ID) {
		owner := metav1.OwnerReference{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "ValkeyCluster", Name: vc.Name, UID: vc.UID, Controller: ptrTrue(), BlockOwnerDeletion: ptrTrue()}
		rot, err := kube.PrepareRotation(ctx, r.Client, r.apiReader(), vc, owner, req.ID, req.Users, current, clientChanged)
		if err != nil {
			req.Pending = "preparing the new passwords: " + err.Error()
		} else {
			prepared = rot
			r.event(vc, corev1.EventTypeNormal, "RotationPrepared", "new passwords for %s made (rotation %s); adding them to every node", strings.Join(req.Users, ", "), req.ID)
		}
	}
	retire := vc.Annotations[v1beta1.AnnotationRetireOldPasswords] != ""
	if retire && p.Rotation.ID == "" && req == nil {
		if err := r.setAnnotation(ctx, vc, v1beta1.AnnotationRetireOldPasswords, "", "retire-annotation"); err != nil {
			return nil, prepared, false, err
		}
		retire = false
	}
	// The rotation Secret of a completed or withdrawn rotation is emptied: its old passwords
	// are of no use any more, and nothing should keep them (emptied, not deleted: the
	// operator has no right to delete Secrets).
	// A failure is reported and tried again next turn; it holds nothing else up.
	if prepared != nil && prepared.ID != p.Rotation.ID && (req == nil || req.ID != prepared.ID) {
		if err := kube.EmptyRotation(ctx, r.Client, vc); err != nil {
			r.event(vc, corev1.EventTypeWarning, "RotationSecretLeft", "the Secret of rotation %s (old and new passwords) could not be emptied: %v", prepared.ID, err)
		} else {
			r.Metrics.APIWrites.WithLabelValues(vc.Namespace, vc.Name, "rotation-secret").Inc()
		}
		prepared = nil
	}
	return req, prepared, retire && p.Rotation.ID != "", nil
}

func ptrTrue() *bool { t := true; return &t }

// comparePasswords asks every answering node about the recorded rotation's passwords.
func comparePasswords(ctx context.Context, w *world, rot *valkey.RotationPasswords) {
	var wg sync.WaitGroup
	for i := range w.obs.Nodes {
		n := &w.obs.Nodes[i]
		if !n.Reachable || n.Pod.IP == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, w.interval)
			defer cancel()
			st, err := w.pool.ComparePasswords(cctx, n.Pod.IP, *rot)
			if err != nil {
				// Not compared: the machine waits for it rather than taking it as anything.
				logFrom(ctx).Info("could not compare a node's passwords with the rotation's", "node", n.Name, "error", err.Error())
				return
			}
			n.Valkey.Passwords = st
		}()
	}
	wg.Wait()
}

// doPasswords carries out the rotation's actions.
func doPasswords(ctx context.Context, x actuation, a machine.Action) error {
	r, vc, w, ip := x.r, x.vc, x.w, x.ip
	rot := w.rotation
	var id, node, runID string
	switch a := a.(type) {
	case machine.PublishPasswords:
		if rot == nil || rot.ID != a.Rotation {
			return fmt.Errorf("%s: %w", a.Rotation, errNoRotation)
		}
		res, err := kube.EnsureAuth(ctx, r.Client, r.apiReader(), vc, w.owner, kube.AuthInputs{
			Remembered: w.passwords, Users: r.users.Accepted(vc.UID), Rotation: rot, Publish: &machine.PasswordsObject{Rotation: a.Rotation, Phase: a.Phase},
		})
		if err != nil {
			return err
		}
		r.Metrics.APIWrites.WithLabelValues(vc.Namespace, vc.Name, "auth-secret").Inc()
		r.passwords.set(vc.UID, res.Passwords)
		r.event(vc, corev1.EventTypeNormal, "PasswordsPublished", "auth Secret written for rotation %s, phase %s", a.Rotation, a.Phase)
		return nil
	case machine.AddPasswords:
		id, node, runID = a.Rotation, a.Node, a.RunID
	case machine.RetirePasswords:
		id, node, runID = a.Rotation, a.Node, a.RunID
	case machine.SwitchMasterAuth:
		id, node, runID = a.Rotation, a.Node, a.RunID
	}
	if rot == nil || rot.ID != id {
		return fmt.Errorf("%s: %w", id, errNoRotation)
	}
	addr, err := ip(node)
	if err != nil {
		return err
	}
	switch a.(type) {
	case machine.AddPasswords:
		return w.pool.AddPasswords(ctx, addr, runID, *rot)
	case machine.RetirePasswords:
		return w.pool.RetirePasswords(ctx, addr, runID, *rot)
	default:
		return w.pool.SwitchMasterAuth(ctx, addr, runID, *rot)
	}
}
