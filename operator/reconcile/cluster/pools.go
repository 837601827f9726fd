package cluster

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
)

// pools keeps one connection pool per cluster: each cluster has its own operator password.
type pools struct {
	opts valkey.Options
	mu   sync.Mutex
	m    map[types.UID]*clusterPool
}

type clusterPool struct {
	password string
	pool     *valkey.Pool
}

func (p *pools) get(cluster types.UID, password string) *valkey.Pool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[types.UID]*clusterPool{}
	}
	if cp, ok := p.m[cluster]; ok && cp.password == password {
		return cp.pool
	} else if ok {
		cp.pool.Close()
	}
	o := p.opts
	o.Password = password
	cp := &clusterPool{password: password, pool: valkey.NewPool(o)}
	p.m[cluster] = cp
	return cp.pool
}

func (p *pools) Remembers(cluster types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.m[cluster]
	return ok
}

func (p *pools) Forget(cluster types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cp, ok := p.m[cluster]; ok {
		cp.pool.Close()
		delete(p.m, cluster)
	}
}
