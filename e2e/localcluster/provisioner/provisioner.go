package provisioner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Defaults of Options.
const (
	DefaultStorageClass = "standard"
	DefaultProvisioner  = "localcluster.valkey.fsm.dev/dir"
)

// Annotations this package reads and writes; the names are Kubernetes's.
const (
	annProvisionedBy      = "pv.kubernetes.io/provisioned-by"
	annStorageProvisioner = "volume.kubernetes.io/storage-provisioner"
	annBetaStorageClass   = "volume.beta.kubernetes.io/storage-class"
	annDefaultClass       = "storageclass.kubernetes.io/is-default-class"
)

// Options configure a Provisioner.
type Options struct {
	// Root is the directory under which every volume gets its directory (required).
	Root string
	// StorageClass is the name of the class whose claims are provisioned (default "standard").
	StorageClass string
	// Provisioner is the class's provisioner name, also written to the
	// pv.kubernetes.io/provisioned-by annotation (default "localcluster.valkey.fsm.dev/dir").
	Provisioner string
	// Capacity bounds the size of one volume: a claim asking for more stays Pending with a
	// ProvisioningFailed event, as with a provisioner whose storage is too small. Nil: the
	// free space of Root's file system when the claim is provisioned.
	Capacity *resource.Quantity
	// Logger receives what the provisioner does (default: discarded).
	Logger *slog.Logger
}

// Provisioner provisions, expands and reclaims directory volumes. Create it with New,
// create its StorageClass with EnsureStorageClass and start it with Run.
type Provisioner struct {
	cs    kubernetes.Interface
	opts  Options
	log   *slog.Logger
	queue workqueue.TypedRateLimitingInterface[string]

	// Set by Run before the worker starts.
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
}

// New returns a Provisioner; nothing happens until Run.
func New(cs kubernetes.Interface, opts Options) *Provisioner {
	if opts.StorageClass == "" {
		opts.StorageClass = DefaultStorageClass
	}
	if opts.Provisioner == "" {
		opts.Provisioner = DefaultProvisioner
	}
	if opts.Root != "" {
		if abs, err := filepath.Abs(opts.Root); err == nil {
			opts.Root = abs
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Provisioner{cs: cs, opts: opts, log: log.With("storageClass", opts.StorageClass)}
}

// Queue keys: one queue serves both kinds of object, so that one worker does everything and
// no two changes to the same claim or volume ever race.
const (
	claimKeyPrefix  = "claim/"
	volumeKeyPrefix = "volume/"
)

// Run provisions, expands and reclaims until ctx ends; then it returns nil once its worker
// and informers have stopped. Call it once.
func (p *Provisioner) Run(ctx context.Context) error {
	if p.opts.Root == "" {
		return errors.New("provisioner: Options.Root is required")
	}
	if err := os.MkdirAll(p.opts.Root, 0o755); err != nil {
		return fmt.Errorf("provisioner: %w", err)
	}
	// The external provisioner's retry intervals (--retry-interval-start 1s, -max 5m): a
	// claim that does not fit is tried again, and says so in an event, at that pace.
	p.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 5*time.Minute),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "provisioner"})

	factory := informers.NewSharedInformerFactory(p.cs, 0)
	claims := factory.Core().V1().PersistentVolumeClaims()
	volumes := factory.Core().V1().PersistentVolumes()
	p.claims, p.volumes = claims.Lister(), volumes.Lister()
	if _, err := claims.Informer().AddEventHandler(p.handler(claimKeyPrefix)); err != nil {
		return err
	}
	if _, err := volumes.Informer().AddEventHandler(p.handler(volumeKeyPrefix)); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), claims.Informer().HasSynced, volumes.Informer().HasSynced) {
		p.queue.ShutDown()
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("provisioner: informer caches did not sync")
	}
	p.log.Info("provisioner running", "root", p.opts.Root, "provisioner", p.opts.Provisioner)

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for p.next(ctx) {
		}
	}()
	<-ctx.Done()
	p.queue.ShutDown()
	wg.Wait()
	p.log.Info("provisioner stopped")
	return nil
}

// handler enqueues the key of every added, changed or deleted object.
func (p *Provisioner) handler(prefix string) cache.ResourceEventHandler {
	add := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			p.queue.Add(prefix + key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    add,
		UpdateFunc: func(_, obj any) { add(obj) },
		DeleteFunc: add,
	}
}

// next handles one key; errors are retried with back-off.
func (p *Provisioner) next(ctx context.Context) bool {
	key, quit := p.queue.Get()
	if quit {
		return false
	}
	defer p.queue.Done(key)
	var err error
	switch {
	case strings.HasPrefix(key, claimKeyPrefix):
		err = p.syncClaim(ctx, strings.TrimPrefix(key, claimKeyPrefix))
	case strings.HasPrefix(key, volumeKeyPrefix):
		err = p.syncVolume(ctx, strings.TrimPrefix(key, volumeKeyPrefix))
	}
	if err != nil && ctx.Err() == nil {
		p.log.Warn("sync failed; retrying", "key", key, "err", err)
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(key)
	return true
}

// ownsClaim tells whether a claim is for this provisioner: of its class, and not handed to
// another provisioner by the binder's annotation.
func (p *Provisioner) ownsClaim(pvc *corev1.PersistentVolumeClaim) bool {
	class := pvc.Annotations[annBetaStorageClass]
	if pvc.Spec.StorageClassName != nil {
		class = *pvc.Spec.StorageClassName
	}
	if class != p.opts.StorageClass {
		return false
	}
	if prov, ok := pvc.Annotations[annStorageProvisioner]; ok && prov != p.opts.Provisioner {
		return false
	}
	return true
}

// ownsVolume tells whether this provisioner made a PV. The class is checked as well as the
// annotation, so that two provisioners with the same name and different classes (as in
// tests) leave each other's volumes alone.
func (p *Provisioner) ownsVolume(pv *corev1.PersistentVolume) bool {
	return pv.Annotations[annProvisionedBy] == p.opts.Provisioner && pv.Spec.StorageClassName == p.opts.StorageClass
}

// dirOf is the directory of a PV of ours by name. PV names are DNS subdomains (no '/',
// no ".."), so the result is always directly under Root.
func (p *Provisioner) dirOf(pvName string) string {
	return filepath.Join(p.opts.Root, pvName)
}

// underRoot tells whether path is a directory directly under Root: the only paths this
// package ever removes, whatever a PV's spec says.
func (p *Provisioner) underRoot(path string) bool {
	return filepath.Dir(filepath.Clean(path)) == p.opts.Root
}
