package storageversion

import (
	"context"
	"fmt"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// The runner tries a failed migration again after firstRetry, doubling up to maxRetry (a CRD
// change tries sooner). Right after an upgrade the conversion webhook, which reading an object
// stored in the old version needs, may not be reachable for a few seconds.
const (
	firstRetry = 5 * time.Second
	maxRetry   = 5 * time.Minute
)

// settle is how long the runner waits after a CRD change (and at its start, which an upgrade
// brings with one) before it rewrites anything. The API server serving the rewrite learns of
// a new storage version from its own watch of the CRD, as this runner does, and in no set
// order with it (with several API servers, each in its own time): a rewrite that reached one
// still encoding the old version, followed by storedVersions without it, would strand that
// object. Seconds are plenty; nothing waits on the migration.
const settle = 5 * time.Second

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Add runs the migration in mgr on the leader: at its start and whenever one of CRDs changes
// (a chart upgrade that brings a new storage version need not restart the operator).
func Add(mgr manager.Manager) error {
	crds, err := apiextensionsclient.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	md, err := metadata.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	c := mgr.GetClient()
	return mgr.Add(&runner{
		m:      Migrator{Reader: mgr.GetAPIReader(), Writer: c, StatusWriter: c.Status(), CRDs: crds.CustomResourceDefinitions(), Log: mgr.GetLogger().WithName("storage-version")},
		md:     md,
		settle: settle,
	})
}

// runner is the manager Runnable behind Add.
type runner struct {
	m      Migrator
	md     metadata.Interface
	settle time.Duration
}

// sleep waits d unless ctx ends first (false).
func (r *runner) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// NeedLeaderElection is true: one writer is enough.
func (r *runner) NeedLeaderElection() bool { return true }

// Start watches the CRDs' metadata (not the CRDs: the ValkeyCluster CRD alone is hundreds of
// kilobytes, and a change is all that is needed to look again), one watch per CRD selected by
// name, which is what a role with resourceNames allows, and migrates on every change.
func (r *runner) Start(ctx context.Context) error {
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
	}
	for _, name := range CRDs {
		inf := metadatainformer.NewFilteredMetadataInformer(r.md, crdResource, "", 0, toolscache.Indexers{}, func(o *metav1.ListOptions) {
			o.FieldSelector = "metadata.name=" + name
		}).Informer()
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
		go inf.Run(ctx.Done())
	}
	poke() // at start, whether or not a watch gets through
	var retry <-chan time.Time
	backoff := firstRetry
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-retry:
		}
		retry = nil
		if !r.sleep(ctx, r.settle) {
			return nil
		}
		err := r.migrateAll(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			r.m.Log.Error(err, "storage migration failed; trying again", "after", backoff)
			retry = time.After(backoff)
			backoff = min(2*backoff, maxRetry)
		default:
			backoff = firstRetry
		}
	}
}

// migrateAll migrates every CRD and logs, per kind, what it did.
func (r *runner) migrateAll(ctx context.Context) error {
	var first error
	for _, crd := range CRDs {
		res, err := r.m.Migrate(ctx, crd)
		if err != nil {
			if first == nil {
				first = fmt.Errorf("%s: %w", crd, err)
			}
			continue
		}
		if res.Done {
			r.m.Log.Info("stored objects moved to the storage version", "crd", crd, "storage", res.Storage,
				"storedVersionsBefore", res.StoredBefore, "objects", res.Objects, "rewritten", res.Rewritten)
		}
	}
	return first
}
