package shared

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// Metrics are the operator's Prometheus metrics. Transition metrics are recorded only after
// the transition was persisted: a metric never reports what status does not show.
type Metrics struct {
	Transitions  *prometheus.CounterVec
	State        *prometheus.GaugeVec
	StateSince   *prometheus.GaugeVec
	APIWrites    *prometheus.CounterVec
	ActionErrors *prometheus.CounterVec
	// JournalAvailable is 1 while the event journal is open, 0 when it could not be opened
	// (the operator then runs from status.history alone).
	JournalAvailable prometheus.Gauge
	// Backups counts finished backup attempts by cluster and result (completed, failed).
	Backups *prometheus.CounterVec
	// BackupLastCompleted is the Unix time of each cluster's newest completed backup, and
	// BackupLastSize its bytes, read from the ValkeyBackups (the backup controller), so that they
	// are right after an operator restart: alert on time() - this.
	BackupLastCompleted *prometheus.GaugeVec
	BackupLastSize      *prometheus.GaugeVec
	// Failovers counts each cluster's completed failovers (FailingOver left for Steady), and
	// FailoverSeconds how long each took, from the decision to the new primary taking writes.
	Failovers       *prometheus.CounterVec
	FailoverSeconds *prometheus.HistogramVec
	// Ready is each cluster's Ready condition (1 True, 0 otherwise); FailoverWaiting is 1
	// while the primary is lost and the machine will not fail over (status.waiting says why).
	// Progressing is the Progressing condition (a hibernation that never finishes stopping
	// its pods stays Progressing in a state that is otherwise quiet).
	Ready           *prometheus.GaugeVec
	Progressing     *prometheus.GaugeVec
	FailoverWaiting *prometheus.GaugeVec
	// Info is always 1, with the cluster's topology and profile (alerts join on it).
	Info *prometheus.GaugeVec
	// CertificateExpiry is the notAfter of the certificate each TLS pod served on the last
	// handshake.
	CertificateExpiry *prometheus.GaugeVec
	// Sentinels is how many sentinels a Sentinel topology runs (its spec), SentinelsAnswering
	// how many answered the operator's last survey, and SentinelsNamingPrimary how many of
	// those name the recorded primary: fewer than a majority cannot fail it over.
	Sentinels              *prometheus.GaugeVec
	SentinelsAnswering     *prometheus.GaugeVec
	SentinelsNamingPrimary *prometheus.GaugeVec
	// Nodes are the data-plane metrics, from each turn's survey.
	Nodes *NodeMetrics
	// Probes counts the prober's surveys by cluster and outcome (answered, failed), and
	// ProbeCadence is the time between the starts of a cluster's consecutive probe rounds as a
	// ratio of its configured interval (1 on time; no cluster label: bounded cardinality).
	Probes       *prometheus.CounterVec
	ProbeCadence prometheus.Histogram
	// Turns counts each cluster's turns (observe, decide, act): an idle cluster has few, its
	// probes are the prober's.
	Turns *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "valkey_operator_transitions_total",
			Help: "State machine transitions persisted, by from state, to state and event.",
		}, []string{"from", "to", "event"}),
		State: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "valkey_operator_cluster_state",
			Help: "1 for the current state of each cluster, 0 for the others.",
		}, []string{"namespace", "cluster", "state"}),
		StateSince: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "valkey_operator_cluster_state_since_seconds",
			Help: "Unix time at which each cluster entered its current state (time in state = now - this).",
		}, []string{"namespace", "cluster"}),
		APIWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "valkey_operator_api_writes_total",
			Help: "Kubernetes API writes made by the reconciler, by cluster and kind of write.",
		}, []string{"namespace", "cluster", "kind"}),
		ActionErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "valkey_operator_action_errors_total",
			Help: "Actions that failed, by action kind.",
		}, []string{"action"}),
		JournalAvailable: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "valkey_operator_journal_available",
			Help: "1 while the event journal is open, 0 when it could not be opened (history --full then shows status.history only).",
		}),
		Backups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "valkey_operator_backups_total",
			Help: "Backup attempts finished, by cluster and result (completed, failed).",
		}, []string{"namespace", "cluster", "result"}),
		BackupLastCompleted: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "valkey_operator_backup_last_completed_timestamp_seconds",
			Help: "Unix time at which each cluster's newest backup completed (status.completedAt of its ValkeyBackups).",
		}, []string{"namespace", "cluster"}),
		BackupLastSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "valkey_operator_backup_last_size_bytes",
			Help: "Bytes of each cluster's newest completed backup (every shard's snapshot together).",
		}, []string{"namespace", "cluster"}),
		Failovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "valkey_operator_failovers_total",
			Help: "Failovers completed (FailingOver to Steady), by cluster.",
		}, []string{"namespace", "cluster"}),
		FailoverSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "valkey_operator_failover_duration_seconds",
			Help:    "Time from entering FailingOver to Steady again, by cluster.",
			Buckets: []float64{0.5, 1, 2, 3, 5, 8, 13, 21, 34, 60, 120, 300},
		}, []string{"namespace", "cluster"}),
		Ready: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "valkey_operator_cluster_ready",
			Help: "1 while the cluster's Ready condition is True (it serves writes on its recognised primary), 0 otherwise.",
		}, []string{"namespace", "cluster"}),
		Progressing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "valkey_operator_cluster_progressing",
			Help: "1 while the cluster's Progressing condition is True (the machine acts or waits for an operation to finish), 0 otherwise.",
		}, []string{"namespace", "cluster"}),
		FailoverWaiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "valkey_operator_failover_waiting",
			Help: "1 while a primary is lost and the machine does not fail over (status.waiting says why), 0 otherwise.",
		}, []string{"namespace", "cluster"}),
		Info: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "valkey_operator_cluster_info",
			Help: "Always 1: each cluster's topology and profile.",
		}, []string{"namespace", "cluster", "topology", "profile"}),
		CertificateExpiry: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "valkey_operator_tls_certificate_expiry_timestamp_seconds",
			Help: "Unix time at which the certificate each TLS pod served on the operator's last handshake expires.",
		}, []string{"namespace", "cluster", "pod"}),
		Sentinels: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "valkey_operator_sentinels",
			Help: "The sentinels a Sentinel topology runs (spec.sentinel.replicas).",
		}, []string{"namespace", "cluster"}),
		SentinelsAnswering: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "valkey_operator_sentinels_answering",
			Help: "The sentinels of a Sentinel topology that answered the operator's last survey.",
		}, []string{"namespace", "cluster"}),
		SentinelsNamingPrimary: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "valkey_operator_sentinels_naming_primary",
			Help: "The sentinels of a Sentinel topology that name the recorded primary: fewer than a majority cannot fail it over.",
		}, []string{"namespace", "cluster"}),
		Nodes: &NodeMetrics{},
		Probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "valkey_operator_probes_total",
			Help: "Surveys of the nodes by the prober, by cluster and outcome (answered, failed).",
		}, []string{"namespace", "cluster", "outcome"}),
		Turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "valkey_operator_turns_total",
			Help: "Turns of the loop (observe, decide, act), by cluster.",
		}, []string{"namespace", "cluster"}),
		ProbeCadence: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "valkey_operator_probe_round_interval_ratio",
			Help:    "Time between the starts of a cluster's consecutive probe rounds, as a ratio of its probe interval (1: on time).",
			Buckets: []float64{0.5, 0.8, 0.9, 0.95, 1, 1.05, 1.1, 1.2, 1.5, 2, 3, 5},
		}),
	}
	m.Ready = register(reg, m.Ready)
	m.Progressing = register(reg, m.Progressing)
	m.Info = register(reg, m.Info)
	m.FailoverWaiting = register(reg, m.FailoverWaiting)
	m.CertificateExpiry = register(reg, m.CertificateExpiry)
	m.Failovers = register(reg, m.Failovers)
	m.FailoverSeconds = register(reg, m.FailoverSeconds)
	m.Nodes = register(reg, m.Nodes)
	m.Sentinels = register(reg, m.Sentinels)
	m.SentinelsAnswering = register(reg, m.SentinelsAnswering)
	m.SentinelsNamingPrimary = register(reg, m.SentinelsNamingPrimary)
	m.Probes = register(reg, m.Probes)
	m.Turns = register(reg, m.Turns)
	m.ProbeCadence = register(reg, m.ProbeCadence)
	m.Backups = register(reg, m.Backups)
	m.BackupLastCompleted = register(reg, m.BackupLastCompleted)
	m.BackupLastSize = register(reg, m.BackupLastSize)
	m.Transitions = register(reg, m.Transitions)
	m.State = register(reg, m.State)
	m.StateSince = register(reg, m.StateSince)
	m.APIWrites = register(reg, m.APIWrites)
	m.ActionErrors = register(reg, m.ActionErrors)
	m.JournalAvailable = register(reg, m.JournalAvailable)
	return m
}

// register registers c, or returns the collector already registered under its name (an
// operator restarted inside one process, as tests do, keeps counting on the same metrics).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}

func (m *Metrics) SetState(ns, name string, state machine.State, since float64) {
	for _, s := range machine.States() {
		v := 0.0
		if s == state {
			v = 1
		}
		m.State.WithLabelValues(ns, name, string(s)).Set(v)
	}
	if since > 0 {
		m.StateSince.WithLabelValues(ns, name).Set(since)
	}
}

func (m *Metrics) Forget(ns, name string) {
	for _, s := range machine.States() {
		m.State.DeleteLabelValues(ns, name, string(s))
	}
	m.StateSince.DeleteLabelValues(ns, name)
	m.APIWrites.DeletePartialMatch(prometheus.Labels{"namespace": ns, "cluster": name})
	m.Backups.DeletePartialMatch(prometheus.Labels{"namespace": ns, "cluster": name})
	m.BackupLastCompleted.DeleteLabelValues(ns, name)
	m.BackupLastSize.DeleteLabelValues(ns, name)
	m.Failovers.DeleteLabelValues(ns, name)
	m.Ready.DeleteLabelValues(ns, name)
	m.Progressing.DeleteLabelValues(ns, name)
	m.Info.DeletePartialMatch(prometheus.Labels{"namespace": ns, "cluster": name})
	m.FailoverWaiting.DeleteLabelValues(ns, name)
	m.Sentinels.DeleteLabelValues(ns, name)
	m.SentinelsAnswering.DeleteLabelValues(ns, name)
	m.SentinelsNamingPrimary.DeleteLabelValues(ns, name)
	m.CertificateExpiry.DeletePartialMatch(prometheus.Labels{"namespace": ns, "cluster": name})
	m.FailoverSeconds.DeleteLabelValues(ns, name)
	m.Nodes.Forget(types.NamespacedName{Namespace: ns, Name: name})
	m.Probes.DeletePartialMatch(prometheus.Labels{"namespace": ns, "cluster": name})
	m.Turns.DeleteLabelValues(ns, name)
}
