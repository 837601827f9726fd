package backups

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/shared"
)

// Base is what both backup controllers are built on: the manager's clients, Events, metrics,
// the stores, and the clock.
type Base struct {
	// Client reads from the manager's cache; APIReader from the API server (nil: Client).
	Client    client.Client
	APIReader client.Reader
	Recorder  events.EventRecorder
	Metrics   *shared.Metrics
	Stores    shared.Stores
	// Now is the clock (tests may stop it); time.Now by default.
	Now func() time.Time
}

func (b *Base) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// apiReader reads past the cache.
func (b *Base) apiReader() client.Reader {
	if b.APIReader != nil {
		return b.APIReader
	}
	return b.Client
}

// event records a Kubernetes Event about the cluster; the reason doubles as the action.
func (b *Base) event(vc *v1beta1.ValkeyCluster, typ, reason, format string, args ...any) {
	b.Recorder.Eventf(vc, nil, typ, reason, reason, format, args...)
}

func logFrom(ctx context.Context) logr.Logger { return log.FromContext(ctx) }
