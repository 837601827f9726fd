package cluster

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// A turn that finishes after the manager stopped must not start a prober: nothing would stop
// it, and it would survey and queue wakes for a controller that is gone (a stopped in-process
// operator kept a cluster's prober running).
func TestATurnAfterTheManagerStoppedStartsNoProber(t *testing.T) {
	r := &Reconciler{}
	p := newProber(r)
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}}
	p.track(vc, &world{interval: time.Hour}, true)
	if len(p.clusters) != 1 {
		t.Fatalf("a running manager's turn tracks its cluster: %d probers", len(p.clusters))
	}
	p.stopAll()
	if len(p.clusters) != 0 {
		t.Fatalf("stopAll left %d probers", len(p.clusters))
	}
	late := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "uid-b"}}
	p.track(late, &world{interval: time.Hour}, true)
	p.track(vc, &world{interval: time.Hour}, true)
	if len(p.clusters) != 0 {
		t.Fatalf("turns after the stop started %d probers", len(p.clusters))
	}
}
