package operatorsuite

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/backup"
	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/machine/conformance"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/cluster"
)

// realWorld is the real side of the actuator contract (machine/conformance): one cluster
// observed and acted on through the reconciler's own turn (cluster.Turn), the very code a
// reconcile runs, driven outside of one. No operator runs against the cluster meanwhile.
type realWorld struct {
	r    *cluster.Reconciler
	key  types.NamespacedName
	turn *cluster.Turn
}

// Observe is what a reconcile would see now.
func (c *realWorld) Observe(ctx context.Context) (machine.Observation, error) {
	t, err := c.r.Observe(ctx, c.key)
	if err != nil {
		return machine.Observation{}, err
	}
	c.turn = t
	return t.Observation(), nil
}

// Apply carries out a as a reconcile does, on the world last observed.
func (c *realWorld) Apply(ctx context.Context, a machine.Action) error {
	if c.turn == nil {
		if _, err := c.Observe(ctx); err != nil {
			return err
		}
	}
	return c.turn.Apply(ctx, a)
}

// Await observes every 200 ms, for up to a minute, until cond holds.
func (c *realWorld) Await(ctx context.Context, what string, cond func(machine.Observation) bool) error {
	var last machine.Observation
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		o, err := c.Observe(ctx)
		if err != nil {
			return false, nil
		}
		last = o
		return cond(o), nil
	})
	if err != nil {
		return fmt.Errorf("%s: %v; last seen: %s", what, err, conformance.Describe(last))
	}
	return nil
}

// cluster is the ValkeyCluster as the hub version has it.
func (c *realWorld) cluster(ctx context.Context) (*v1beta1.ValkeyCluster, error) {
	var vc v1beta1.ValkeyCluster
	return &vc, k.Get(ctx, c.key, &vc)
}

// passwords are the cluster's users' passwords, from its auth Secret.
func (c *realWorld) passwords(ctx context.Context, vc *v1beta1.ValkeyCluster) (valkey.Passwords, error) {
	var s corev1.Secret
	if err := k.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: kube.NamesOf(vc).Auth}, &s); err != nil {
		return valkey.Passwords{}, err
	}
	return valkey.Passwords{Operator: string(s.Data[kube.KeyOperatorPassword]), Client: string(s.Data[kube.KeyClientPassword]),
		Replication: string(s.Data[kube.KeyReplicationPassword]), Probe: string(s.Data[kube.KeyProbePassword])}, nil
}

// replicationWorld is realWorld with what the replication table's restore and rotation rows
// prepare. store is the test's own client of the bucket the cluster's spec.backup names.
type replicationWorld struct {
	realWorld
	store backup.Store
}

// TakeSnapshot backs shard 0 up from its primary into the cluster's spec.backup store, as a
// backup does (backup.TakeAll), and names it in spec.restoreFrom, where the real
// RestoreSnapshot finds its store (no operator runs to act on the request meanwhile).
func (c *replicationWorld) TakeSnapshot(ctx context.Context) (string, error) {
	o, err := c.Observe(ctx)
	if err != nil {
		return "", err
	}
	vc, err := c.cluster(ctx)
	if err != nil {
		return "", err
	}
	if vc.Spec.Backup == nil {
		return "", errors.New("the cluster has no spec.backup: the table's restore row needs a store")
	}
	var prim *machine.Node
	for i, n := range o.Nodes {
		if n.Reachable && n.Shard == 0 && n.Valkey.Role == machine.RolePrimary {
			prim = &o.Nodes[i]
		}
	}
	if prim == nil {
		return "", errors.New("shard 0 has no primary to back up")
	}
	pw, err := c.passwords(ctx, vc)
	if err != nil {
		return "", err
	}
	pool := valkey.NewPool(valkey.Options{Password: pw.Operator})
	defer pool.Close()
	if err := pool.AllowSnapshots(ctx, prim.Pod.IP); err != nil {
		return "", err
	}
	dir := path.Join(vc.Namespace, vc.Name, fmt.Sprintf("conformance-%d", time.Now().UnixNano()))
	src := []backup.ShardSource{{Index: 0, Node: prim.Name, IP: prim.Pod.IP, Source: backup.Source{
		Addr: valkey.Addr(prim.Pod.IP), User: valkey.UserOperator, Password: pw.Operator}}}
	if _, err := backup.TakeAll(ctx, c.store, dir, vc.Name, o.Spec.Mode, prim.Valkey.Version, src, time.Now); err != nil {
		return "", err
	}
	// A restore into the running cluster: v1beta1 asks the spec to say it discards its data.
	spec := vc.Spec.Backup.Store
	vc.Spec.RestoreFrom = &v1beta1.RestoreSource{Store: &spec, Path: dir, DiscardCurrentData: true}
	if err := k.Update(ctx, vc); err != nil {
		return "", err
	}
	if _, err := c.Observe(ctx); err != nil {
		return "", err
	}
	return c.store.Location(dir + "/"), nil
}

// conformanceRotation is the rotation the table's rows prepare.
const conformanceRotation = "conformance@1"

// PrepareRotation prepares a rotation of the application and replication passwords as a
// request does (the rotation Secret, kube.PrepareRotation) and records it in status as
// rotation-requested would (no operator runs to record it), so that observations compare every
// node's passwords with it.
func (c *replicationWorld) PrepareRotation(ctx context.Context) (string, error) {
	vc, err := c.cluster(ctx)
	if err != nil {
		return "", err
	}
	pw, err := c.passwords(ctx, vc)
	if err != nil {
		return "", err
	}
	owner := metav1.OwnerReference{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "ValkeyCluster", Name: vc.Name, UID: vc.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	users := []string{valkey.UserClient, valkey.UserReplication}
	if prepared, err := kube.LoadRotation(ctx, k, vc); err != nil {
		return "", err
	} else if prepared == nil || prepared.ID != conformanceRotation {
		if _, err := kube.PrepareRotation(ctx, k, k, vc, owner, conformanceRotation, users, pw, ""); err != nil {
			return "", err
		}
	}
	if m := vc.Status.Machine; m == nil || m.Rotation == nil {
		if vc.Status.Machine == nil {
			vc.Status.Machine = &v1beta1.MachineStatus{}
		}
		vc.Status.Machine.Rotation = &v1beta1.RotationRecord{ID: conformanceRotation, Users: valkey.UserClient + "," + valkey.UserReplication, Phase: string(machine.RotationAdding)}
		if err := k.Status().Update(ctx, vc); err != nil {
			return "", err
		}
	}
	return conformanceRotation, c.Await(ctx, "the rotation prepared and compared", func(o machine.Observation) bool {
		for _, n := range o.Nodes {
			if n.Reachable && n.Valkey.Passwords.Rotation != conformanceRotation {
				return false
			}
		}
		return true
	})
}
