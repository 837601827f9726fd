package cluster

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/shared"
)

// nodeMemory remembers one value per cluster and pod, in memory only (an operator restart
// forgets it). Surveys of one round run in parallel, hence the lock.
type nodeMemory[V any] struct {
	mu sync.Mutex
	m  map[types.UID]map[string]V
}

// update replaces the value of (cluster, node) by f(old, found); keep false drops it.
func (n *nodeMemory[V]) update(cluster types.UID, node string, f func(old V, found bool) (v V, keep bool)) V {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = map[types.UID]map[string]V{}
	}
	if n.m[cluster] == nil {
		n.m[cluster] = map[string]V{}
	}
	old, found := n.m[cluster][node]
	v, keep := f(old, found)
	if keep {
		n.m[cluster][node] = v
	} else {
		delete(n.m[cluster], node)
	}
	return v
}

func (n *nodeMemory[V]) get(cluster types.UID, node string) V {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.m[cluster][node]
}

func (n *nodeMemory[V]) set(cluster types.UID, node string, v V) {
	n.update(cluster, node, func(V, bool) (V, bool) { return v, true })
}

func (n *nodeMemory[V]) Forget(cluster types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.m, cluster)
}

func (n *nodeMemory[V]) Remembers(cluster types.UID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.m[cluster]
	return ok
}

// passwordMemory remembers each cluster's passwords (in memory only).
type passwordMemory struct{ nodeMemory[valkey.Passwords] }

const passwordsKey = "passwords"

func (m *passwordMemory) get(cluster types.UID) valkey.Passwords {
	return m.nodeMemory.get(cluster, passwordsKey)
}

func (m *passwordMemory) set(cluster types.UID, p valkey.Passwords) {
	m.nodeMemory.set(cluster, passwordsKey, p)
}

// lookMemory remembers each cluster's last look (in memory only).
type lookMemory struct{ nodeMemory[shared.Look] }

const lookKey = "look"

func (m *lookMemory) get(cluster types.UID) shared.Look { return m.nodeMemory.get(cluster, lookKey) }

func (m *lookMemory) set(cluster types.UID, l shared.Look) { m.nodeMemory.set(cluster, lookKey, l) }
