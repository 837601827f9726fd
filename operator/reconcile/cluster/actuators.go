package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// The operator's actuators: one row per action kind the machine decides, each a small
// function in the file of its concern (objects, roles, slots, passwords, restore). Adding an
// action kind is adding a row here and its function there; the table's test fails on a kind
// the machine has and the table has not.

// actuation is what one action is carried out with: the reconciler's clients, the cluster,
// and this turn's world.
type actuation struct {
	r  *Reconciler
	vc *v1beta1.ValkeyCluster
	w  *world
}

// ip is the address of a pod of the cluster, as this turn saw it.
func (x actuation) ip(node string) (string, error) {
	p := x.w.pods[node]
	if p == nil || p.Status.PodIP == "" {
		return "", fmt.Errorf("pod %s has no IP", node)
	}
	return p.Status.PodIP, nil
}

// actuator carries out one action.
type actuator func(ctx context.Context, x actuation, a machine.Action) error

// row adapts an actuator of one action type to the table's.
func row[A machine.Action](f func(context.Context, actuation, A) error) actuator {
	return func(ctx context.Context, x actuation, a machine.Action) error { return f(ctx, x, a.(A)) }
}

// actuators is the table, by machine.Action.Kind.
var actuators = map[string]actuator{
	// objects.go: the Kubernetes objects.
	machine.EnsureObjects{}.Kind():     row(ensureObjects),
	machine.ExpandVolumes{}.Kind():     row(expandVolumes),
	machine.RollPod{}.Kind():           row(rollPod),
	machine.ReloadCertificate{}.Kind(): row(reloadCertificate),
	// roles.go: who is primary, who follows whom, who takes writes.
	machine.Promote{}.Kind():     row(promote),
	machine.Detach{}.Kind():      row(detach),
	machine.Seal{}.Kind():        row(seal),
	machine.Unseal{}.Kind():      row(unseal),
	machine.Fence{}.Kind():       row(fence),
	machine.OpenWrites{}.Kind():  row(openWrites),
	machine.CloseWrites{}.Kind(): row(closeWrites),
	machine.ReplicaOf{}.Kind():   row(replicaOf),
	machine.HandOver{}.Kind():    row(handOver),
	// slots.go: the cluster bus and the slot map.
	machine.AddNode{}.Kind():       row(addNode),
	machine.RemoveNode{}.Kind():    row(removeNode),
	machine.ForgetNode{}.Kind():    row(forgetNode),
	machine.MigrateSlots{}.Kind():  row(migrateSlots),
	machine.TakeSlotsOver{}.Kind(): row(takeSlotsOver),
	machine.AssignSlots{}.Kind():   row(assignSlots),
	// rotation.go: the password rotation's steps.
	machine.AddPasswords{}.Kind():     doPasswords,
	machine.PublishPasswords{}.Kind(): doPasswords,
	machine.SwitchMasterAuth{}.Kind(): doPasswords,
	machine.RetirePasswords{}.Kind():  doPasswords,
	// restore.go: loading a snapshot.
	machine.RestoreSnapshot{}.Kind(): row(restoreSnapshot),
	// actuate_sentinels.go: the Sentinel topology's sentinels.
	machine.SentinelMonitor{}.Kind():  row(sentinelMonitor),
	machine.SentinelRemove{}.Kind():   row(sentinelRemove),
	machine.SentinelReset{}.Kind():    row(sentinelReset),
	machine.RollSentinel{}.Kind():     row(rollSentinel),
	machine.HoldBack{}.Kind():         row(holdBack),
	machine.SentinelHandOver{}.Kind(): row(sentinelHandOver),
}

// errNotSupported is for actions this operator version has no actuator for.
var errNotSupported = errors.New("not supported by this operator version")

// do carries out one action through its row of the table.
func (r *Reconciler) do(ctx context.Context, vc *v1beta1.ValkeyCluster, w *world, a machine.Action) error {
	act, ok := actuators[a.Kind()]
	if !ok {
		return fmt.Errorf("%s: %w", a.Kind(), errNotSupported)
	}
	return act(ctx, actuation{r: r, vc: vc, w: w}, a)
}
