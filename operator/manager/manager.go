package manager

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/valkey-fsm/valkey-operator/actuators/backup"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/operator/admission"
	"github.com/valkey-fsm/valkey-operator/operator/conversionwebhook"
	"github.com/valkey-fsm/valkey-operator/operator/journal"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/backups"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/cluster"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/shared"
	"github.com/valkey-fsm/valkey-operator/operator/storageversion"
)

var setGlobalLogger sync.Once

// Scheme knows the built-in kinds and both versions of the operator's kinds: the reconciler
// reads and writes v1beta1, the hub and storage version; the conversion webhook needs both.
func Scheme() *runtime.Scheme { return conversionwebhook.Scheme() }

// Run runs the operator until ctx ends, against the cluster that cfg (or, when nil, the
// usual kubeconfig / in-cluster configuration) points at.
func Run(ctx context.Context, cfg *rest.Config, c Config) error {
	level := zapcore.InfoLevel
	switch c.LogLevel {
	case "debug":
		level = zapcore.DebugLevel
	case "error":
		level = zapcore.ErrorLevel
	}
	logger := zap.New(zap.Level(level), zap.JSONEncoder(), zap.WriteTo(c.logWriter()))
	// controller-runtime's global logger can be set once per process; each manager (tests run
	// several) gets its own through Options.Logger as well.
	setGlobalLogger.Do(func() { ctrl.SetLogger(logger) })
	log := logger.WithName("setup")

	if cfg == nil {
		var err error
		if cfg, err = ctrl.GetConfig(); err != nil {
			return fmt.Errorf("no Kubernetes configuration: %w", err)
		}
	}
	opts := ctrl.Options{
		Scheme:                  Scheme(),
		Metrics:                 metricsOptions(c),
		HealthProbeBindAddress:  c.ProbeAddr,
		PprofBindAddress:        c.PprofAddr,
		LeaderElection:          c.LeaderElect,
		LeaderElectionID:        "valkey-operator.valkey.fsm.dev",
		LeaderElectionNamespace: c.LeaderElectionNamespace,
		// Stepping down releases the lease at once, so a new leader takes over without
		// waiting for the lease to expire.
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 durationOrNil(c.LeaseDuration),
		RenewDeadline:                 durationOrNil(c.RenewDeadline),
		RetryPeriod:                   durationOrNil(c.RetryPeriod),
		Logger:                        logger,
	}
	if c.SkipNameValidation {
		opts.Controller.SkipNameValidation = ptr.To(true)
	}
	opts.Cache = cacheOptions(splitNamespaces(c.WatchNamespace))
	if c.WebhookAddr != "" {
		host, port, err := splitHostPort(c.WebhookAddr)
		if err != nil {
			return fmt.Errorf("--webhook-bind-address: %w", err)
		}
		opts.WebhookServer = webhook.NewServer(webhook.Options{Host: host, Port: port, CertDir: c.WebhookCertDir})
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return err
	}
	if c.WebhookAddr != "" {
		// Every replica serves conversions, leader or not: the API server needs one whenever
		// a client uses v1alpha1, whoever leads.
		conversionwebhook.Register(mgr.GetWebhookServer(), mgr.GetScheme())
		if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return err
		}
	}
	// One typed client for what the manager's client does not cover (reviews, the
	// front-proxy settings, the operator's own pod).
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if c.WebhookAddr != "" {
		// The admission webhooks are served beside the conversion webhook, with its
		// certificate; the API server calls them only where the chart's webhook
		// configurations (webhooks.enabled) name them.
		admission.Register(mgr.GetWebhookServer(), mgr.GetScheme(), mgr.GetAPIReader(), cs.AuthorizationV1().SubjectAccessReviews())
	}
	var j *journal.Journal
	var journalErr error
	if c.JournalPath != "" {
		// A previous leader on the same volume may still hold the lock for a moment.
		if journalErr = os.MkdirAll(filepath.Dir(c.JournalPath), 0o755); journalErr == nil {
			j, journalErr = journal.Open(c.JournalPath, 30*time.Second)
		}
		if journalErr == nil && c.JournalObservations != 0 {
			j.SetObservationLimit(c.JournalObservations) // negative: none
		}
	}
	if journalErr != nil {
		// The journal is a record, not the machine's memory (status is): a volume that cannot
		// be opened must not stop failovers. Reported (log, metric); status.history stays.
		log.Error(journalErr, "the event journal cannot be opened; running without it (status.history keeps the recent transitions)", "path", c.JournalPath)
		j = nil
	}
	if j != nil {
		defer func() { _ = j.Close() }()
		if c.JournalAddr != "" {
			srv := &journalServer{addr: c.JournalAddr, certDir: c.JournalCertDir, j: j, reader: mgr.GetAPIReader(), cs: cs, log: logger.WithName("journal")}
			if err := mgr.Add(srv); err != nil {
				return err
			}
		}
	}
	vopts := valkey.Options{}
	if c.SourceIP != "" {
		vopts.SourceIP = netip.MustParseAddr(c.SourceIP)
	}
	r := &cluster.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  shared.BoundedRecorder{EventRecorder: mgr.GetEventRecorder("valkey-operator")},
		Journal:   j,
		Metrics:   shared.NewMetrics(metrics.Registry),
		Options: cluster.Options{
			RetryInterval:           c.RetryInterval,
			MaxConcurrentReconciles: c.MaxConcurrentReconciles,
			Valkey:                  vopts,
		},
	}
	if c.BackupAmbientCredentials {
		r.Options.AmbientCredentials = backup.NewAmbientCredentials()
		log.Info("backup stores without a credentials Secret use the operator's own identity (--backup-ambient-credentials): every watched namespace reaches the buckets it reaches")
	}
	if j != nil {
		r.Metrics.JournalAvailable.Set(1)
	} else {
		r.Metrics.JournalAvailable.Set(0)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	// The backups read each cluster's nodes from the cluster controller's last look (r).
	if err := backups.Setup(mgr, &backups.BackupReconciler{
		Base: backups.Base{
			Client: r.Client, APIReader: r.APIReader, Recorder: r.Recorder, Metrics: r.Metrics,
			Stores: shared.Stores{Reader: r.APIReader, Ambient: r.Options.AmbientCredentials},
		},
		Clusters: r, Runner: r.Clock(), Valkey: r.Options.Valkey,
		MaxAttempts: int32(c.BackupAttempts), BackOff: c.BackupBackOff,
	}); err != nil {
		return err
	}
	// Moving every stored object to the storage version needs every namespace's: the
	// cluster-wide operator's job, which a namespaced one leaves to it.
	if len(splitNamespaces(c.WatchNamespace)) == 0 {
		if err := storageversion.Add(mgr); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	if c.PodName != "" && c.PodNamespace != "" {
		l := &leaderLabel{cs: cs, namespace: c.PodNamespace, pod: c.PodName, log: logger.WithName("leader")}
		// A restarted replica is a follower until it wins the lease again; without leader
		// election this replica is the one that acts, and says so at once. The answer is
		// also this process's pod, which Events about the operator itself are about.
		self, err := l.set(ctx, !c.LeaderElect)
		if err != nil {
			log.Error(err, "setting this pod's leader label")
		}
		if c.LeaderElect {
			if err := mgr.Add(l); err != nil {
				return err
			}
		}
		if journalErr != nil && self != nil {
			// kubectl describe pod shows it next to the pod's own status.
			shared.BoundedRecorder{EventRecorder: mgr.GetEventRecorder("valkey-operator")}.Eventf(self, nil, corev1.EventTypeWarning, "JournalUnavailable", "OpenJournal",
				"the event journal %s cannot be opened, running without it (status.history keeps the recent transitions; history --full cannot read older ones): %v", c.JournalPath, journalErr)
		}
	}
	log.Info("starting", "watchNamespace", c.WatchNamespace, "leaderElection", c.LeaderElect, "journal", c.JournalPath)
	return mgr.Start(ctx)
}

// durationOrNil leaves controller-runtime's default in place for 0.
func durationOrNil(d time.Duration) *time.Duration {
	if d <= 0 {
		return nil
	}
	return &d
}

// splitHostPort splits a bind address into the webhook server's Host and Port.
func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, err
	}
	return host, port, nil
}
