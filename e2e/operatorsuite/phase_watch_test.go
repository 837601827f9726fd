package operatorsuite

import (
	"context"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
)

// watchPhases records every status.phase the API server sends for the cluster from now on (a
// watch loses no write, so a phase persisted for a single status patch is seen too). The
// returned function stops the watch and returns the phases in order, repeats dropped.
func watchPhases(t *testing.T, ctx context.Context, ns, name string) func() []string {
	t.Helper()
	wc, err := client.NewWithWatch(cl.RESTConfig(), client.Options{Scheme: manager.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	var current v1beta1.ValkeyCluster
	if err := wc.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &current); err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &v1beta1.ValkeyClusterList{}, client.InNamespace(ns),
		client.MatchingFields{"metadata.name": name}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: current.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	phases := []string{current.Status.Phase}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			vc, ok := ev.Object.(*v1beta1.ValkeyCluster)
			if !ok || ev.Type == watch.Error {
				continue
			}
			mu.Lock()
			if phases[len(phases)-1] != vc.Status.Phase {
				phases = append(phases, vc.Status.Phase)
			}
			mu.Unlock()
		}
	}()
	return func() []string {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), phases...)
	}
}
