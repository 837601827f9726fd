package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/valkey-fsm/valkey-operator/actuators/backup"
	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/machine/conformance"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/shared"
)

// ConformanceWorld is the real side of the actuator contract (machine/conformance): one
// cluster's actuators and observer, the very code a reconcile runs, driven outside of one.
// Nothing else may act on the cluster meanwhile (no operator running against it).
type ConformanceWorld struct {
	r   *Reconciler
	key types.NamespacedName
	vc  *v1beta1.ValkeyCluster
	w   *world
}

// NewConformanceWorld drives the cluster key with r's actuators and observer.
func NewConformanceWorld(r *Reconciler, key types.NamespacedName) *ConformanceWorld {
	r.defaults()
	return &ConformanceWorld{r: r, key: key}
}

// Observe is what a reconcile would see now.
func (c *ConformanceWorld) Observe(ctx context.Context) (machine.Observation, error) {
	var vc v1beta1.ValkeyCluster
	if err := c.r.Client.Get(ctx, c.key, &vc); err != nil {
		return machine.Observation{}, err
	}
	w, err := c.r.look(ctx, &vc)
	if err != nil {
		return machine.Observation{}, err
	}
	c.vc, c.w = &vc, w
	return w.obs, nil
}

// Apply carries out a as a reconcile does, on the world last observed.
func (c *ConformanceWorld) Apply(ctx context.Context, a machine.Action) error {
	if c.w == nil {
		if _, err := c.Observe(ctx); err != nil {
			return err
		}
	}
	return c.r.do(ctx, c.vc, c.w, a)
}

// Await observes every 200 ms, for up to a minute, until cond holds.
func (c *ConformanceWorld) Await(ctx context.Context, what string, cond func(machine.Observation) bool) error {
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

// TakeSnapshot backs shard 0 up from its primary into the cluster's spec.backup store, as a
// backup does (backup.TakeAll), and names it in spec.restoreFrom, where the real
// RestoreSnapshot finds its store (no operator runs to act on the request meanwhile).
func (c *ConformanceWorld) TakeSnapshot(ctx context.Context) (string, error) {
	if _, err := c.Observe(ctx); err != nil {
		return "", err
	}
	vc := c.vc.DeepCopy()
	if vc.Spec.Backup == nil {
		return "", errors.New("the cluster has no spec.backup: the table's restore row needs a store")
	}
	spec := vc.Spec.Backup.Store
	v1beta1.SetStoreDefaults(&spec)
	store, err := c.r.stores().Open(ctx, vc.Namespace, spec)
	if err != nil {
		return "", err
	}
	var prim *machine.Node
	for i, n := range c.w.obs.Nodes {
		if n.Reachable && n.Shard == 0 && n.Valkey.Role == machine.RolePrimary {
			prim = &c.w.obs.Nodes[i]
		}
	}
	if prim == nil {
		return "", errors.New("shard 0 has no primary to back up")
	}
	if err := c.w.pool.AllowSnapshots(ctx, prim.Pod.IP); err != nil {
		return "", err
	}
	dir := shared.BackupPath(vc.Namespace, vc.Name, fmt.Sprintf("conformance-%d", time.Now().UnixNano()))
	src := []backup.ShardSource{{Index: 0, Node: prim.Name, IP: prim.Pod.IP, Source: backup.Source{
		Addr: valkey.Addr(prim.Pod.IP), User: valkey.UserOperator, Password: c.w.passwords.Operator, LocalAddr: c.r.Options.Valkey.LocalAddr()}}}
	src[0].Addr, src[0].TLS = c.w.pool.TLSOf(prim.Pod.IP)
	if _, err := backup.TakeAll(ctx, store, dir, vc.Name, c.w.obs.Spec.Mode, prim.Valkey.Version, src, time.Now); err != nil {
		return "", err
	}
	// A restore into the running cluster: v1beta1 asks the spec to say it discards its data.
	vc.Spec.RestoreFrom = &v1beta1.RestoreSource{Store: &spec, Path: dir, DiscardCurrentData: true}
	if err := c.r.Client.Update(ctx, vc); err != nil {
		return "", err
	}
	if _, err := c.Observe(ctx); err != nil {
		return "", err
	}
	return store.Location(dir + "/"), nil
}

// conformanceRotation is the rotation the table's rows prepare.
const conformanceRotation = "conformance@1"

// PrepareRotation prepares a rotation of the application and replication passwords as a
// request does (the rotation Secret) and records it in status as rotation-requested would (no
// operator runs to record it), so that observations compare every node's passwords with it.
func (c *ConformanceWorld) PrepareRotation(ctx context.Context) (string, error) {
	if _, err := c.Observe(ctx); err != nil {
		return "", err
	}
	if c.w.rotation == nil || c.w.rotation.ID != conformanceRotation {
		users := []string{valkey.UserClient, valkey.UserReplication}
		if _, err := kube.PrepareRotation(ctx, c.r.Client, c.r.apiReader(), c.vc, c.w.owner, conformanceRotation, users, c.w.passwords, ""); err != nil {
			return "", err
		}
	}
	if m := c.vc.Status.Machine; m == nil || m.Rotation == nil {
		before, vc := c.vc.DeepCopy(), c.vc.DeepCopy()
		if vc.Status.Machine == nil {
			vc.Status.Machine = &v1beta1.MachineStatus{}
		}
		vc.Status.Machine.Rotation = &v1beta1.RotationRecord{ID: conformanceRotation, Users: valkey.UserClient + "," + valkey.UserReplication, Phase: string(machine.RotationAdding)}
		if err := c.r.patchStatus(ctx, vc, before, "conformance-rotation"); err != nil {
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
