package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/e2e/localcluster/netfault"
)

// Faults: the ways tests and chaos suites break a local cluster on purpose. Each acts at
// once and returns; the cluster's normal machinery (restarts, controllers) does the rest.

// KillContainer SIGKILLs a container's processes, as the OOM killer or a crash would. The
// agent restarts it according to the Pod's restart policy and counts the restart.
func (c *Cluster) KillContainer(namespace, pod, container string) error {
	_, ct, err := c.container(namespace, pod, container)
	if err != nil {
		return err
	}
	return ct.killAll()
}

// PauseContainer freezes a container's processes (cgroup freezer): they hold their sockets
// but answer nothing, like a stalled machine or a long GC pause.
func (c *Cluster) PauseContainer(namespace, pod, container string) error {
	_, ct, err := c.container(namespace, pod, container)
	if err != nil {
		return err
	}
	return ct.freeze(true)
}

// ResumeContainer undoes PauseContainer.
func (c *Cluster) ResumeContainer(namespace, pod, container string) error {
	_, ct, err := c.container(namespace, pod, container)
	if err != nil {
		return err
	}
	return ct.freeze(false)
}

// DeletePod deletes a Pod through the API with its own grace period, as a user or an
// eviction would; its controller re-creates it.
func (c *Cluster) DeletePod(ctx context.Context, namespace, name string) error {
	return c.cs.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{})
}

// ForceDeletePod deletes a Pod with no grace period, as kubectl delete --grace-period=0 --force
// does: its containers are killed at once, without their preStop hooks.
func (c *Cluster) ForceDeletePod(ctx context.Context, namespace, name string) error {
	zero := int64(0)
	return c.cs.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
}

// StopNode powers a Node off: every container on it is killed at once, its lease stops being
// renewed, the Node and its Pods are reported not ready and the Node is tainted unreachable.
// Pods deleted meanwhile stay Terminating until the node is back, as in a real cluster.
func (c *Cluster) StopNode(ctx context.Context, name string) error {
	n, ok := c.agent.nodes[name]
	if !ok {
		return fmt.Errorf("no node %q in this local cluster", name)
	}
	n.setStopped(true)
	rs := c.agent.runnersOn(n)
	for _, r := range rs {
		for _, ct := range append(append([]*container{}, r.containers...), r.inits...) {
			_ = ct.killAll()
		}
	}
	n.mu.Lock()
	n.killedAt = time.Now()
	n.mu.Unlock()
	if err := setNodeReady(ctx, c.cs, n, false, "NodeStatusUnknown", "node stopped by the test (local cluster fault)"); err != nil {
		return err
	}
	// All at once, as the node lifecycle controller marks a lost node's Pods: one after the
	// other, 100 Pods' updates behind a busy client took minutes (the mass failover
	// benchmark's clients were measured from when this returned).
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.markNodeDown(ctx)
		}()
	}
	wg.Wait()
	return nil
}

// NodeStoppedAt is when StopNode last killed the node's containers (zero: never): the
// fault's moment, before the API is told (which may take a while on a busy cluster).
func (c *Cluster) NodeStoppedAt(name string) time.Time {
	n, ok := c.agent.nodes[name]
	if !ok {
		return time.Time{}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.killedAt
}

// StartNode powers a stopped Node on: its containers start again (each restart counted) and
// it reports Ready.
func (c *Cluster) StartNode(ctx context.Context, name string) error {
	n, ok := c.agent.nodes[name]
	if !ok {
		return fmt.Errorf("no node %q in this local cluster", name)
	}
	if err := setNodeReady(ctx, c.cs, n, true, "KubeletReady", "node agent is posting ready status"); err != nil {
		return err
	}
	n.setStopped(false)
	for _, r := range c.agent.runnersOn(n) {
		r.changed()
	}
	return nil
}

// ErrNoPartitions is returned by the partition faults when nftables cannot be used here.
var ErrNoPartitions = errors.New("network partitions need root and nftables (apt-get install nftables)")

// Partition drops all traffic between two Pods (or a Pod and an address of the host) in
// both directions; connections time out. Each Pod sends from its own address in its own
// network namespace, so rules on the addresses catch all of it, on the bridge between the
// Pods and on the host's way in and out.
func (c *Cluster) Partition(a, b netip.Addr) error {
	if c.net == nil {
		return ErrNoPartitions
	}
	return c.net.Partition(a, b)
}

// DropOneWay drops what Pod (or address) from sends to to, and nothing the other way: a
// one-way partition.
func (c *Cluster) DropOneWay(from, to netip.Addr) error {
	if c.net == nil {
		return ErrNoPartitions
	}
	return c.net.DropEndpoints(netfault.Endpoint{Addr: from}, netfault.Endpoint{Addr: to})
}

// IsolatePod drops all traffic between a Pod and every other address except the given
// ones (for example an operator that should still see it). The host reaches Pods from
// HostIP unless a process binds another address.
func (c *Cluster) IsolatePod(a netip.Addr, except ...netip.Addr) error {
	if c.net == nil {
		return ErrNoPartitions
	}
	return c.net.Isolate(a, except...)
}

// Heal removes every partition.
func (c *Cluster) Heal() error {
	if c.net == nil {
		return ErrNoPartitions
	}
	return c.net.Heal()
}

// WipeVolumes kills a Pod's containers and empties its emptyDir and claim directories, so
// it restarts with no data: the restarted-empty primary of Valkey's replication hazard.
func (c *Cluster) WipeVolumes(ctx context.Context, namespace, pod string) error {
	r, err := c.agent.runner(namespace, pod)
	if err != nil {
		return err
	}
	// Hold restarts and kill the containers so nothing writes while the files go; the
	// supervisors start them again once the gate opens.
	r.startGate.Lock()
	defer r.startGate.Unlock()
	for _, ct := range r.containers {
		if ct.killAll() == nil {
			ct.waitExit(ctx)
		}
	}
	p := r.currentPod()
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir == nil && v.PersistentVolumeClaim == nil {
			continue
		}
		dir := r.vols.paths[v.Name]
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}
