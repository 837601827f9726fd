package admission

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// cluster validates a ValkeyCluster: the Secrets it newly names, and a restore's backup.
func (v *validator) cluster(ctx context.Context, req admission.Request) admission.Response {
	var vc, old v1beta1.ValkeyCluster
	update, err := v.decode(req, &vc, &old)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	uses := clusterSecretUses(&vc.Spec)
	var oldUses []secretUse
	if update {
		oldUses = clusterSecretUses(&old.Spec)
	}
	problems, backupUses, err := v.restoreBackup(ctx, &vc, &old, update)
	if err != nil {
		return answer(nil, nil, err)
	}
	secretProblems, err := v.checkSecrets(ctx, req.UserInfo, vc.Namespace, append(newUses(uses, oldUses), backupUses...))
	return answer(append(problems, secretProblems...), clusterWarnings(&vc.Spec), err)
}

// restoreBackup checks spec.restoreFrom.backup when it is new (on CREATE, or changed by an
// UPDATE): the ValkeyBackup must exist and be Completed, since the restore starts from what
// it wrote; and the store credentials it was written with are a Secret this spec makes the
// operator read, so they are checked as if the spec named them.
func (v *validator) restoreBackup(ctx context.Context, vc, old *v1beta1.ValkeyCluster, update bool) ([]string, []secretUse, error) {
	r := vc.Spec.RestoreFrom
	if r == nil || r.Backup == "" {
		return nil, nil, nil
	}
	if update && old.Spec.RestoreFrom != nil && old.Spec.RestoreFrom.Backup == r.Backup {
		return nil, nil, nil
	}
	var b v1beta1.ValkeyBackup
	err := v.reader.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: r.Backup}, &b)
	if apierrors.IsNotFound(err) {
		return []string{fmt.Sprintf("spec.restoreFrom.backup names ValkeyBackup %s/%s, which does not exist: name a Completed backup (kubectl get valkeybackups -n %s), or restore from a store with restoreFrom.store and restoreFrom.path",
			vc.Namespace, r.Backup, vc.Namespace)}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading ValkeyBackup %s/%s (spec.restoreFrom.backup): %w", vc.Namespace, r.Backup, err)
	}
	if b.Status.Phase != v1beta1.BackupCompleted {
		phase := string(b.Status.Phase)
		if phase == "" {
			phase = "not started"
		}
		return []string{fmt.Sprintf("spec.restoreFrom.backup names ValkeyBackup %s/%s, which is %s, not Completed: a restore needs every snapshot and the manifest stored; wait until it is Completed (kubectl wait --for=condition=Ready valkeybackup/%s -n %s), or name another backup",
			vc.Namespace, r.Backup, phase, r.Backup, vc.Namespace)}, nil, nil
	}
	if b.Status.Store == nil {
		return nil, nil, nil
	}
	uses := storeUses(fmt.Sprintf("ValkeyBackup %s's status.store (spec.restoreFrom.backup)", r.Backup), b.Status.Store)
	for i := range uses {
		uses[i].fix = "restore with restoreFrom.store and restoreFrom.path naming credentials you hold"
	}
	return nil, uses, nil
}

// clusterWarnings are what deserves a second look but is allowed.
func clusterWarnings(spec *v1beta1.ValkeyClusterSpec) []string {
	var w []string
	if spec.Auth.Enabled != nil && !*spec.Auth.Enabled {
		w = append(w, "spec.auth.enabled is false: every client that reaches the pods reads and writes without a password")
	}
	if spec.Topology != v1beta1.TopologyStandalone && spec.Replicas != nil && *spec.Replicas == 0 {
		w = append(w, "spec.replicas is 0: there is no replica to fail over to, so losing a primary's pod stops its writes until the pod is back")
	}
	if spec.TLS.SecretRef != nil && (spec.TLS.Mode == "" || spec.TLS.Mode == v1beta1.TLSDisabled) {
		w = append(w, "spec.tls.secretRef is set but spec.tls.mode is Disabled: the nodes serve no TLS until mode is PlainAndTLS")
	}
	return w
}
