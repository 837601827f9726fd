package manager

import (
	"flag"
	"io"
	"net/netip"
	"os"
	"time"

	"github.com/valkey-fsm/valkey-operator/operator/journal"
)

// Config is the operator's command line.
type Config struct {
	MetricsAddr string
	// MetricsSecure serves /metrics over HTTPS to callers the API server authenticates
	// (TokenReview) and authorises (SubjectAccessReview: get on the non-resource URL
	// /metrics); MetricsCertDir holds tls.crt and tls.key (empty: a self-signed certificate).
	MetricsSecure  bool
	MetricsCertDir string
	ProbeAddr      string
	// PprofAddr serves Go's profiles (/debug/pprof/) when set: off by default, since heap
	// dumps show what the operator holds, Secrets included.
	PprofAddr   string
	JournalAddr string
	JournalPath string
	// JournalCertDir holds tls.crt and tls.key of the journal endpoint (empty: self-signed).
	JournalCertDir string
	// WebhookAddr serves the CRDs' conversion webhook and the admission webhooks (empty:
	// none); WebhookCertDir holds their tls.crt and tls.key, signed by the CA the CRDs'
	// caBundle names.
	WebhookAddr, WebhookCertDir string
	// JournalObservations is how many observations without a transition the journal keeps
	// per cluster, for replays: 0 is the default (journal.DefaultObservationLimit), so that a
	// Config written in code keeps them; negative keeps none (the flag's 0).
	JournalObservations     int
	LeaderElect             bool
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod time the leader election: a standby takes
	// over at most LeaseDuration after the leader stopped renewing.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// PodName and PodNamespace are the operator's own pod (from the Downward API), labelled
	// while it leads.
	PodName, PodNamespace   string
	WatchNamespace          string
	MaxConcurrentReconciles int
	RetryInterval           time.Duration
	// BackupAttempts and BackupBackOff: how many attempts a backup gets, and the wait after
	// the first failed one (doubled after each).
	BackupAttempts int
	BackupBackOff  time.Duration
	// BackupAmbientCredentials lets backup stores that name no credentials Secret sign with
	// the operator's own identity (the AWS SDK's default chain: IRSA, Pod Identity, an
	// instance role). Off by default: that identity is shared by every namespace the operator
	// watches, so whoever may create a ValkeyCluster reaches every bucket it reaches.
	BackupAmbientCredentials bool
	SourceIP                 string
	LogLevel                 string
	// LogOutput receives the logs (default: standard error).
	LogOutput io.Writer
	// SkipNameValidation lets tests start several managers in one process.
	SkipNameValidation bool
}

func (c Config) logWriter() io.Writer {
	if c.LogOutput != nil {
		return c.LogOutput
	}
	return os.Stderr
}

// ParseFlags reads the command line. The endpoints listen on every address of the pod, as
// any pod's servers do, so that `kubectl port-forward` (which dials the pod's localhost)
// reaches them; connections to Valkey leave from POD_IP when it is set.
func ParseFlags(args []string) (Config, error) {
	host := os.Getenv("POD_IP")
	var c Config
	fs := flag.NewFlagSet("valkey-operator run", flag.ContinueOnError)
	fs.StringVar(&c.MetricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables it)")
	fs.BoolVar(&c.MetricsSecure, "metrics-secure", true, "serve metrics over HTTPS, only to callers allowed to get /metrics (TokenReview and SubjectAccessReview)")
	fs.StringVar(&c.MetricsCertDir, "metrics-cert-dir", "", "directory with tls.crt and tls.key for the metrics endpoint (default: a self-signed certificate)")
	fs.StringVar(&c.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.StringVar(&c.PprofAddr, "pprof-bind-address", "", "address of Go's profiling endpoint /debug/pprof/ (empty: off); profiles hold what the operator holds, Secrets included, so bind it only where nobody else reaches")
	fs.StringVar(&c.JournalAddr, "journal-bind-address", ":8082", "address of the journal endpoint, an aggregated API the API server proxies to (kubectl valkey history --full); empty disables it")
	fs.StringVar(&c.JournalCertDir, "journal-cert-dir", "", "directory with tls.crt and tls.key for the journal endpoint, whose CA the APIService names (default: a self-signed certificate)")
	fs.StringVar(&c.WebhookAddr, "webhook-bind-address", ":9443", "address of the CRDs' conversion webhook (v1alpha1 <-> v1beta1) and of the admission webhooks (the chart's webhooks.enabled), which the API server calls through the chart's webhook Service; empty disables them")
	fs.StringVar(&c.WebhookCertDir, "webhook-cert-dir", "/var/run/valkey-operator/webhook-tls", "directory with tls.crt and tls.key of the conversion webhook, signed by the CA in the CRDs' caBundle (reloaded when they change)")
	fs.IntVar(&c.JournalObservations, "journal-observations", journal.DefaultObservationLimit, "observations that caused no transition the journal keeps per cluster (the newest; 1-1.5 KB a node each, a repeat about 100 bytes), so that kubectl valkey replay --set can show decisions taken earlier or later; 0 keeps none")
	fs.StringVar(&c.JournalPath, "journal-path", "/var/lib/valkey-operator/journal.db", "bbolt journal file (empty disables the journal)")
	fs.BoolVar(&c.LeaderElect, "leader-elect", true, "elect a leader so that only one replica of the operator acts")
	fs.StringVar(&c.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election lease (default: the operator's own)")
	fs.DurationVar(&c.LeaseDuration, "leader-election-lease-duration", 15*time.Second, "how long a standby waits after the leader's last renewal before it takes over")
	fs.DurationVar(&c.RenewDeadline, "leader-election-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it steps down")
	fs.DurationVar(&c.RetryPeriod, "leader-election-retry-period", 2*time.Second, "how often leader election is tried")
	fs.StringVar(&c.WatchNamespace, "watch-namespace", "", "only manage ValkeyClusters in these namespaces, comma-separated (default: all)")
	fs.IntVar(&c.MaxConcurrentReconciles, "max-concurrent-reconciles", 4, "how many clusters are reconciled at once")
	fs.DurationVar(&c.RetryInterval, "retry-interval", 2*time.Second, "how soon a cluster whose action failed is looked at again (each cluster's survey interval is its spec.failover.probeIntervalSeconds)")
	fs.IntVar(&c.BackupAttempts, "backup-attempts", 3, "how many attempts a backup gets before it stays Failed")
	fs.DurationVar(&c.BackupBackOff, "backup-backoff", 30*time.Second, "wait after a backup's first failed attempt, doubled after each")
	fs.BoolVar(&c.BackupAmbientCredentials, "backup-ambient-credentials", false, "let backup stores that name no credentials Secret use the operator's own cloud identity (the AWS SDK's default chain: environment, IRSA web identity, EKS Pod Identity, instance role); every namespace the operator watches then reaches every bucket that identity reaches")
	fs.StringVar(&c.SourceIP, "source-ip", host, "local address for connections to Valkey nodes (default: POD_IP)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug, info or error")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.JournalObservations <= 0 {
		c.JournalObservations = -1 // the flag's 0: none
	}
	c.PodName, c.PodNamespace = os.Getenv("POD_NAME"), os.Getenv("POD_NAMESPACE")
	if c.SourceIP != "" {
		if _, err := netip.ParseAddr(c.SourceIP); err != nil {
			return c, err
		}
	}
	return c, nil
}
