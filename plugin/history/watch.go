package history

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// rewatchPause is how long Watch waits before it reads the cluster again after its watch
// ended, so that a server that keeps closing watches is not hammered.
var rewatchPause = time.Second

// errDeleted ends a watch whose cluster was deleted.
var errDeleted = errors.New("deleted")

// Watch prints the current status.history of the cluster, then the transitions the operator
// appends, until ctx is done (Ctrl-C), which is a normal end and returns nil.
//
// It watches the one object from the resourceVersion it read. When the watch ends (the
// server closes watches after a while, or answers 410 Gone once the version is too old) it
// reads the object again and resumes: the printer prints only sequence numbers above the
// last printed, so nothing is printed twice, and entries the bounded history dropped while
// nobody was watching show as a gap.
func Watch(ctx context.Context, res dynamic.ResourceInterface, namespace, name string, p *printer) error {
	for {
		u, err := res.Get(ctx, name, metav1.GetOptions{})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return kube.NotFoundHint(err, namespace, name)
		}
		if err := printObject(p, u); err != nil {
			return err
		}
		w, err := res.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion: u.GetResourceVersion(),
		})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("watching ValkeyCluster %s/%s: %w", namespace, name, err)
		}
		err = follow(ctx, w, p)
		w.Stop()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errDeleted):
			fmt.Fprintf(p.notes, "ValkeyCluster %s/%s was deleted\n", namespace, name)
			return nil
		case err != nil:
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(rewatchPause):
		}
	}
}

// follow prints the cluster at each event of w until w ends (nil: read the object again and
// watch anew), the cluster is deleted (errDeleted) or ctx is done.
func follow(ctx context.Context, w watch.Interface, p *printer) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				if err := printObject(p, u); err != nil {
					return err
				}
			case watch.Deleted:
				return errDeleted
			case watch.Error:
				// Usually 410 Gone: the resourceVersion is too old. Reading the object again
				// starts from a current one.
				return nil
			}
		}
	}
}

func printObject(p *printer, u *unstructured.Unstructured) error {
	vc, err := kube.Typed(u)
	if err != nil {
		return err
	}
	return p.print(vc)
}
