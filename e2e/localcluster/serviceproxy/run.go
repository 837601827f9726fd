package serviceproxy

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// retryAfter is how long to wait before retrying listeners that failed to bind, e.g.
// because the previous owner of the address has not let go of it yet.
const retryAfter = time.Second

// Run watches Services and Pods and serves ClusterIPs until ctx ends. It returns nil after
// ctx ends, and only after every listener and every proxied connection is closed. Call it
// once.
func (p *Proxy) Run(ctx context.Context) error {
	// Managed fields are most of a Pod's bytes and the proxy never reads them.
	factory := informers.NewSharedInformerFactoryWithOptions(p.cs, 0,
		informers.WithTransform(func(obj any) (any, error) {
			if m, ok := obj.(metav1.Object); ok {
				m.SetManagedFields(nil)
			}
			return obj, nil
		}))
	services := factory.Core().V1().Services()
	pods := factory.Core().V1().Pods()
	p.services, p.pods = services.Lister(), pods.Lister()

	// Only Service changes move listeners. A Pod event advances the Pod generation of the
	// routes that select it: their next connection lists the backends again (the informer
	// updates its cache before it calls handlers, so that list sees the change).
	trigger := make(chan struct{}, 1)
	poke := func() {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	if _, err := services.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}); err != nil {
		return err
	}
	podOf := func(obj any) *corev1.Pod {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		pod, _ := obj.(*corev1.Pod)
		return pod
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.podChanged(podOf(obj)) },
		UpdateFunc: func(old, obj any) { p.podChanged(podOf(old), podOf(obj)) },
		DeleteFunc: func(obj any) { p.podChanged(podOf(obj)) },
	}); err != nil {
		return err
	}

	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer p.shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), services.Informer().HasSynced, pods.Informer().HasSynced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("serviceproxy: informer caches did not sync")
	}
	p.log.Info("service proxy running", "static", len(p.static))

	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-trigger:
		case <-retry.C:
		}
		if failed := p.sync(); failed {
			retry.Reset(retryAfter)
		}
	}
}

// shutdown closes every listener and connection and waits for their goroutines, so that
// nothing the proxy started outlives Run.
func (p *Proxy) shutdown() {
	p.mu.Lock()
	p.closed = true
	for addr, l := range p.listeners {
		l.close()
		delete(p.listeners, addr)
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.serving = map[string]bool{}
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	p.handlers.Wait()
	p.log.Info("service proxy stopped")
}
