package storageversion

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Its own CRDs only, by name (a list or watch is allowed too when it selects one by name);
// the rewrites go through the status subresource.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch,resourceNames=valkeyclusters.valkey.fsm.dev;valkeybackups.valkey.fsm.dev;valkeyacls.valkey.fsm.dev
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions/status,verbs=update,resourceNames=valkeyclusters.valkey.fsm.dev;valkeybackups.valkey.fsm.dev;valkeyacls.valkey.fsm.dev
// +kubebuilder:rbac:groups=valkey.fsm.dev,resources=valkeyclusters/status;valkeybackups/status;valkeyacls/status,verbs=update

// CRDs are the operator's CRDs, the only ones it migrates.
var CRDs = []string{"valkeyclusters.valkey.fsm.dev", "valkeybackups.valkey.fsm.dev", "valkeyacls.valkey.fsm.dev"}

// pageSize bounds how many objects one list holds in memory.
const pageSize = 100

// crdAttempts is how often Migrate starts over when the CRD changed while its objects were
// being rewritten (its storage version may be another one now).
const crdAttempts = 5

// Migrator rewrites a CRD's objects in its storage version.
type Migrator struct {
	// Reader lists and reads the objects, uncached (the manager's API reader): a cache would
	// hold every object whole, and its copy may be older than the API server's.
	Reader client.Reader
	// Writer updates them.
	Writer client.Writer
	// StatusWriter updates them through their status subresource.
	StatusWriter client.SubResourceWriter
	// CRDs reads and updates the CRDs.
	CRDs apiextensionsclient.CustomResourceDefinitionInterface
	Log  logr.Logger
}

// Result is what Migrate did for one CRD.
type Result struct {
	CRD string
	// Storage is the CRD's storage version.
	Storage string
	// StoredBefore is status.storedVersions as Migrate found it.
	StoredBefore []string
	// Objects is how many objects were updated; Rewritten how many of those the API server
	// really wrote (the others were stored in the storage version already).
	Objects, Rewritten int
	// Done is false when storedVersions already named the storage version alone.
	Done bool
}

// Migrate brings the stored objects of the CRD named crd to its storage version and sets its
// status.storedVersions to that version alone. Nothing is written when storedVersions already
// is. Safe beside any other writer: every update carries the resourceVersion it read (a
// conflict re-reads and retries, so no concurrent change is lost), and an update through
// the status subresource cannot change a spec.
func (m *Migrator) Migrate(ctx context.Context, crd string) (Result, error) {
	res := Result{CRD: crd}
	for attempt := 1; ; attempt++ {
		def, err := m.CRDs.Get(ctx, crd, metav1.GetOptions{})
		if err != nil {
			return res, fmt.Errorf("reading the CRD %s: %w", crd, err)
		}
		storage := storageVersion(def)
		if storage == nil {
			return res, fmt.Errorf("the CRD %s has no storage version", crd)
		}
		res.Storage = storage.Name
		res.StoredBefore = slices.Clone(def.Status.StoredVersions)
		if slices.Equal(def.Status.StoredVersions, []string{storage.Name}) {
			return res, nil
		}
		gvk := schema.GroupVersionKind{Group: def.Spec.Group, Version: storage.Name, Kind: def.Spec.Names.ListKind}
		viaStatus := storage.Subresources != nil && storage.Subresources.Status != nil
		objects, rewritten, err := m.rewriteAll(ctx, gvk, viaStatus)
		res.Objects += objects
		res.Rewritten += rewritten
		if err != nil {
			return res, err
		}
		// Only if the CRD is still the one read above (the update carries its
		// resourceVersion): a new storage version in between would leave objects behind.
		def.Status.StoredVersions = []string{storage.Name}
		_, err = m.CRDs.UpdateStatus(ctx, def, metav1.UpdateOptions{})
		if err == nil {
			res.Done = true
			return res, nil
		}
		if !apierrors.IsConflict(err) || attempt == crdAttempts {
			return res, fmt.Errorf("setting the storedVersions of %s to [%s]: %w", crd, storage.Name, err)
		}
	}
}

// storageVersion is the CRD's version marked storage.
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Storage {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

// rewriteAll updates every object of the list kind gvk unchanged, a page at a time, and says
// how many it updated and how many of those the API server wrote.
func (m *Migrator) rewriteAll(ctx context.Context, list schema.GroupVersionKind, viaStatus bool) (objects, rewritten int, err error) {
	page := &unstructured.UnstructuredList{}
	page.SetGroupVersionKind(list)
	for {
		if err := m.Reader.List(ctx, page, client.Limit(pageSize), client.Continue(page.GetContinue())); err != nil {
			return objects, rewritten, fmt.Errorf("listing %s: %w", list.Kind, err)
		}
		for i := range page.Items {
			wrote, err := m.rewrite(ctx, &page.Items[i], viaStatus)
			if err != nil {
				return objects, rewritten, err
			}
			objects++
			if wrote {
				rewritten++
			}
		}
		if page.GetContinue() == "" {
			return objects, rewritten, nil
		}
	}
}

// rewrite updates obj as it was read. The API server decodes it, encodes it in the storage
// version and writes it when the bytes differ from those stored, so an object stored in an
// older version is rewritten and one stored in the storage version is left alone (its
// resourceVersion stays: that is how wrote is known). Through the status subresource where
// the version has one: the API server then keeps everything but the status as stored, and
// admission webhooks on the kind, which may mutate a spec on update, see nothing.
func (m *Migrator) rewrite(ctx context.Context, obj *unstructured.Unstructured, viaStatus bool) (wrote bool, err error) {
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		before := obj.GetResourceVersion()
		var err error
		if viaStatus {
			err = m.StatusWriter.Update(ctx, obj)
		} else {
			err = m.Writer.Update(ctx, obj)
		}
		if apierrors.IsConflict(err) {
			// Someone wrote it since: read what is there now and update that, so the
			// retry cannot put back what they changed.
			fresh, ferr := m.reread(ctx, obj)
			if ferr != nil {
				return ferr
			}
			*obj = *fresh
			return err
		}
		wrote = err == nil && obj.GetResourceVersion() != before
		return err
	})
	switch {
	case apierrors.IsNotFound(err) || errors.Is(err, errGone):
		return false, nil // deleted meanwhile: nothing of it is stored
	case err != nil:
		return false, fmt.Errorf("rewriting %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return wrote, nil
}

// errGone: the object was deleted between the list and its update.
var errGone = errors.New("deleted")

// reread reads obj again, with a list by name: the operator's role lets it list every kind,
// and get only some.
func (m *Migrator) reread(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(obj.GroupVersionKind().GroupVersion().WithKind(obj.GetKind() + "List"))
	if err := m.Reader.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{"metadata.name": obj.GetName()}); err != nil {
		return nil, err
	}
	for i := range list.Items {
		if list.Items[i].GetUID() == obj.GetUID() {
			return &list.Items[i], nil
		}
	}
	return nil, errGone
}
