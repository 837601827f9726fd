package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/valkey-fsm/valkey-operator/actuators/backup"
	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/operator/journal"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/shared"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/users"
)

// Finalizer holds a ValkeyCluster until the operator has let go of it (connections, journal
// stream, metrics); owned objects are removed by the garbage collector through their owner
// references.
const Finalizer = "valkey.fsm.dev/finalizer"

// Options tune the loop.
type Options struct {
	// RetryInterval is how soon a cluster whose action failed is reconciled again (default
	// 2 s). Detection (probe interval, failure threshold) and the fence timeout come from
	// each cluster's spec.
	RetryInterval time.Duration
	// HandOverTimeout bounds how long a hand-over pauses writes waiting for its target to
	// catch up (default 5 s).
	HandOverTimeout time.Duration
	// HistoryLimit is how many transitions status.history keeps (default machine's).
	HistoryLimit int
	// MaxConcurrentReconciles is how many clusters are reconciled at once (default 4).
	MaxConcurrentReconciles int
	// Valkey says how nodes are reached (source address, timeouts).
	Valkey valkey.Options
	// AmbientCredentials, when set, signs the requests of backup stores that name no
	// credentials Secret with the operator's own identity (the AWS SDK's default chain). Nil:
	// such stores are refused. The operator's administrator opts in (--backup-ambient-credentials):
	// every namespace the operator watches then reaches what that identity reaches.
	AmbientCredentials *backup.AmbientCredentials
}

func (o Options) withDefaults() Options {
	if o.RetryInterval <= 0 {
		o.RetryInterval = 2 * time.Second
	}
	if o.HandOverTimeout <= 0 {
		o.HandOverTimeout = 5 * time.Second
	}
	if o.HistoryLimit <= 0 {
		o.HistoryLimit = machine.DefaultHistoryLimit
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = 4
	}
	return o
}

// Reconciler runs the loop for every ValkeyCluster.
type Reconciler struct {
	// Client reads from the manager's cache, which holds only the objects the operator made
	// (see the manager's cache options).
	Client client.Client
	// APIReader reads from the API server: objects the operator did not make (a user's
	// existing password Secret; whatever stands in the way of an object it is about to create).
	// Nil: Client.
	APIReader client.Reader
	// Recorder writes Kubernetes Events (events.k8s.io) about the clusters.
	Recorder events.EventRecorder
	Journal  *journal.Journal // nil: no journal
	Metrics  *shared.Metrics
	Options  Options
	// Now is the clock (tests may stop it); time.Now by default.
	Now func() time.Time

	// optionsOnce fills in r.Options' defaults once: reconciles run in parallel (found by the
	// race detector: every Reconcile wrote r.Options).
	optionsOnce sync.Once
	// clock names this process's clock in observations (host and start time): a new leader or
	// a restarted operator is another clock, whose times the machine never compares with the
	// ones persisted before it.
	clock string

	probes probeCounters
	// prober surveys every cluster's nodes apart from the turns (prober.go); acted remembers
	// when each cluster's turn last acted (a survey from before then does not show its work).
	prober *prober
	acted  nodeMemory[time.Time]
	// answered remembers, per node, the container whose process last answered a survey: a
	// failed survey of another container means that process is gone (Pod.Restarted).
	answered nodeMemory[string]
	live     liveApplied
	pools    pools
	// passwords remembers each cluster's passwords from its last turn: a deleted or emptied
	// auth Secret is put back from them instead of re-keying running nodes (in memory only:
	// after an operator restart the Secret must be restored by hand; status says so).
	passwords passwordMemory
	// looks remembers what each cluster's last turn observed and decided: a backup reads its
	// sources from it instead of surveying the nodes a second time.
	looks lookMemory
	// restores remembers each cluster's backup verification for spec.restoreFrom.
	restores restoreChecks
	// refusedLoads: restores whose load was refused for their content.
	refusedLoads loadRefusals
	// users applies each cluster's ValkeyACL users and remembers which process got which set.
	users users.Users
	// tls remembers each cluster's TLS configuration (the CA nodes are verified against).
	tls tlsMemory
	// finalWaits: what each deleted cluster's deletion waits for (finalbackup.go).
	finalWaits finalWaits
}

func (r *Reconciler) defaults() {
	r.optionsOnce.Do(func() {
		r.Options = r.Options.withDefaults()
		r.prober = newProber(r)
		r.users.Client, r.users.APIReader, r.users.Recorder, r.users.Now = r.Client, r.APIReader, r.Recorder, r.Now
		host, _ := os.Hostname()
		r.clock = fmt.Sprintf("%s/%d", host, time.Now().UnixNano())
	})
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func logFrom(ctx context.Context) logr.Logger { return log.FromContext(ctx) }

// event records a Kubernetes Event about the cluster; the reason doubles as the action.
func (r *Reconciler) event(vc *v1beta1.ValkeyCluster, typ, reason, format string, args ...any) {
	r.Recorder.Eventf(vc, nil, typ, reason, reason, format, args...)
}

// The operator's RBAC, and no more: the operatorsuite runs every in-process operator under
// exactly these rules and fails when the API server's audit log shows a refused request, or a
// rule nothing used in the whole suite. Reads of its own objects come from the cache (list,
// watch); get is for reads past the cache (APIReader).
// +kubebuilder:rbac:groups=valkey.fsm.dev,resources=valkeyclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=valkey.fsm.dev,resources=valkeyclusters/status,verbs=patch
// +kubebuilder:rbac:groups=valkey.fsm.dev,resources=valkeyclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps;secrets,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=list;watch;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;delete

// Reconcile is one turn of the loop for one cluster.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.defaults()
	var vc v1beta1.ValkeyCluster
	if err := r.Client.Get(ctx, req.NamespacedName, &vc); err != nil {
		if apierrors.IsNotFound(err) {
			// Reached through a ValkeyACL that names it: say so on the ValkeyACL.
			r.users.WithoutCluster(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !vc.DeletionTimestamp.IsZero() {
		return r.deleting(ctx, &vc)
	}
	if !controllerutil.ContainsFinalizer(&vc, Finalizer) {
		controllerutil.AddFinalizer(&vc, Finalizer)
		if err := r.Client.Update(ctx, &vc); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		r.Metrics.APIWrites.WithLabelValues(vc.Namespace, vc.Name, "finalizer").Inc()
	}
	if vc.Status.State == "" {
		if err := r.initialize(ctx, &vc); err != nil {
			return r.retry(ctx, &vc, err)
		}
	}
	res, err := r.turn(ctx, &vc)
	if err != nil {
		return r.retry(ctx, &vc, err)
	}
	return res, nil
}

// retry turns a conflict into an immediate, quiet requeue (observe again). A status write
// refused for another reason is reported (a Warning Event, an error in the log) and retried
// at the retry interval: a tight loop would not make the API server accept it, and nothing
// the machine decides is carried out before its transition is written. Other errors back off.
func (r *Reconciler) retry(ctx context.Context, vc *v1beta1.ValkeyCluster, err error) (ctrl.Result, error) {
	if errors.Is(err, errConflict) || apierrors.IsConflict(err) {
		logFrom(ctx).V(1).Info("status changed meanwhile; observing again")
		return ctrl.Result{RequeueAfter: 10 * time.Millisecond}, nil
	}
	var stuck errCannotGoOn
	if errors.As(err, &stuck) {
		logFrom(ctx).Info("cannot go on", "why", stuck.why)
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
	}
	var refused statusWriteError
	if errors.As(err, &refused) {
		logFrom(ctx).Error(err, "status write refused; retrying at the retry interval", "after", r.Options.RetryInterval)
		r.event(vc, corev1.EventTypeWarning, "StatusWriteFailed", "%v (nothing the machine decides is done until its transition is written; retrying every %s)", err, r.Options.RetryInterval)
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
	}
	return ctrl.Result{}, err
}

// turn is one turn of the loop (machine.StartTurn: observe -> decide -> persist -> journal;
// then act) with what the operator does beside the machine around it, and the report.
func (r *Reconciler) turn(ctx context.Context, vc *v1beta1.ValkeyCluster) (ctrl.Result, error) {
	log := logFrom(ctx)
	start := time.Now()
	r.Metrics.Turns.WithLabelValues(vc.Namespace, vc.Name).Inc()
	ct := &clusterTurn{r: r, ctx: ctx, vc: vc}
	t, err := machine.StartTurn(ct, machine.TurnConfig{Prior: priorFailures(vc), Now: r.now, BackOff: r.backOff, Runs: true})
	if err != nil {
		return ctrl.Result{}, err
	}
	w, d := ct.w, t.Decision
	desired := w.desired
	if tr := d.Transition; tr != nil && tr.Event == machine.EventSwitchoverStale && vc.Annotations[v1beta1.AnnotationSwitchoverTo] != "" {
		// The request failed; retrying it is the user's decision, not a loop of ours.
		r.event(vc, corev1.EventTypeWarning, "SwitchoverAborted", "%s", tr.Message)
		if err := r.setSwitchover(ctx, vc, ""); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.clearFailoverWithout(ctx, vc, w.obs, d); err != nil {
		return ctrl.Result{}, err
	}
	// Services, ConfigMap and PDB are kept as they should be on every turn (no write when
	// they are); the StatefulSet only changes when the machine says so. A support object that
	// cannot be written (an admission refusal, a quota) is reported and does not stop the
	// machine's actions: a failover must not wait for a Service repair.
	res, supportErr := kube.Apply(ctx, r.Client, r.apiReader(), desired, false)
	r.recordApply(ctx, vc, res)
	w.supportErr = supportErr
	if supportErr != nil {
		r.event(vc, corev1.EventTypeWarning, "SupportObjectsFailed", "%v", supportErr)
	}
	if t.Acted() {
		r.acted.set(vc.UID, "", time.Now())
	}
	actErr := ct.act(t)
	if d.Next.State != machine.Resharding {
		actErr = errors.Join(actErr, narrowReplicationUsers(ctx, w))
	}
	r.applyLive(ctx, vc, w)
	w.readsSecrets = r.users.Apply(ctx, usersTurn(vc, w)) || w.readsSecrets
	roleErr := r.syncRoles(ctx, vc, w, d.Next)
	if roleErr != nil {
		r.event(vc, corev1.EventTypeWarning, "RoleLabelFailed", "%v", roleErr)
	}
	if err := r.report(ctx, vc, w, d); err != nil {
		return ctrl.Result{}, err
	}
	if failed := errors.Join(actErr, supportErr, roleErr); failed != nil {
		log.Info("not everything was done; deciding again on the next observation", "error", failed.Error())
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
	}
	// Valkey's own state changes (a primary dying) produce no Kubernetes event: the prober
	// surveys every interval and wakes the cluster when a survey finds something new; an idle
	// cluster is reconciled again at idleResync. Otherwise the next turn comes from the clock,
	// at the cluster's probe interval, and faster while something is in progress.
	// Probes are due every interval from the start of this one: a turn that waited for a
	// survey timeout has used that time already.
	w.readsSecrets = w.readsSecrets || vc.Spec.Auth.PasswordSecretRef != nil || w.tlsLeaf != nil || w.tlsErr != nil
	idle := t.Settled() && d.Next.State == machine.Steady && d.Next.Op == (machine.Operation{}) && w.restorePhase == "" && !w.readsSecrets
	r.prober.track(vc, w, idle)
	if idle {
		return ctrl.Result{RequeueAfter: idleResync}, nil
	}
	after := w.interval - time.Since(start)
	if t.Acted() || after < 50*time.Millisecond {
		// Something was just done (a hand-over, a promotion): look again soon, so that the
		// role labels, and the client Service with them, follow within milliseconds.
		after = 50 * time.Millisecond
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// look builds this turn's world: the cluster's passwords, the spec defaulted once, the
// objects it asks for, and what is observed.
func (r *Reconciler) look(ctx context.Context, vc *v1beta1.ValkeyCluster) (*world, error) {
	owner := metav1.OwnerReference{
		APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "ValkeyCluster", Name: vc.Name, UID: vc.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
	persisted := persistedOf(&vc.Status)
	prepared, err := kube.LoadRotation(ctx, r.Client, vc)
	if err != nil {
		return nil, err
	}
	auth, err := kube.EnsureAuth(ctx, r.Client, r.apiReader(), vc, owner, kube.AuthInputs{
		Remembered: r.passwords.get(vc.UID), Users: r.users.Accepted(vc.UID), Rotation: prepared,
	})
	passwords, restored := auth.Passwords, auth.Restored
	if err != nil {
		if errors.Is(err, kube.ErrAuthLost) || errors.Is(err, kube.ErrNotOurs) || errors.Is(err, kube.ErrExistingSecret) {
			// The user's to fix: said in status.waiting (and Ready, while nothing runs) as well as
			// in an Event once per reason, and looked at again at the retry interval.
			if vc.Status.Waiting != err.Error() {
				r.event(vc, corev1.EventTypeWarning, "AuthFailed", "%v", err)
			}
			return nil, r.waitFor(ctx, vc, err.Error())
		}
		r.event(vc, corev1.EventTypeWarning, "AuthFailed", "%v", err)
		return nil, err
	}
	r.passwords.set(vc.UID, passwords)
	if len(restored) > 0 {
		r.event(vc, corev1.EventTypeWarning, "AuthSecretRestored", "the auth Secret lost %s; put back from what the running nodes use", strings.Join(restored, ", "))
	}
	// The spec's defaults, once per turn: everything below reads this copy (the object the
	// API server returns is defaulted, but one created before a field existed is not).
	defaulted := vc.DeepCopy()
	v1beta1.SetDefaults(&defaulted.Spec)
	cert := r.certificateStatus(ctx, defaulted)
	tg, err := r.tlsGate(ctx, defaulted, cert)
	if err != nil {
		return nil, err
	}
	gate, fresh := tg.why, tg.fresh
	built := defaulted
	if tg.mode != defaulted.Spec.TLS.Mode && !fresh {
		built = defaulted.DeepCopy()
		built.Spec.TLS.Mode = tg.mode
	}
	desired := kube.BuildMounting(built, owner, tg.secret)
	if gate != "" && fresh {
		// Nothing runs yet: the support objects (the Certificate among them) are made, the
		// StatefulSet waits for a certificate the pods can serve.
		res, err := kube.Apply(ctx, r.Client, r.apiReader(), desired, false)
		r.recordApply(ctx, vc, res)
		if err != nil {
			gate += "; " + err.Error()
		}
		if vc.Status.Waiting != gate {
			// Said where users look, once per reason: a Secret the user named that is refused
			// (missing, of another type, made for something else) is theirs to fix; an issuer's
			// is cert-manager's to issue.
			typ, reason := corev1.EventTypeWarning, "TLSRefused"
			if defaulted.Spec.TLS.IssuerRef != nil {
				typ, reason = corev1.EventTypeNormal, "TLSWaiting"
			}
			r.event(vc, typ, reason, "%s", gate)
		}
		return nil, r.waitFor(ctx, vc, gate)
	}
	pool := r.pools.get(vc.UID, passwords.Operator)
	w, err := r.observe(ctx, defaulted, desired, pool)
	if err != nil {
		return nil, err
	}
	w.certificate = cert
	r.Metrics.Nodes.Record(types.NamespacedName{Namespace: vc.Namespace, Name: vc.Name}, w.obs.Nodes, w.stats)
	if gate != "" {
		w.tlsErr = errors.New(gate)
	}
	w.passwords, w.owner = passwords, owner
	w.existingSecretErr = auth.ExistingSecretErr
	w.obs.Passwords = auth.Published
	w.obs.Spec.RotationGrace = defaulted.Spec.Auth.RotationGracePeriod.Duration
	w.obs.Spec.Rotation, w.rotation, w.obs.Spec.RetireNow, err = r.rotationRequest(ctx, vc, persisted, passwords, auth.ClientChanged, prepared)
	if err != nil {
		return nil, err
	}
	if w.rotation != nil && w.rotation.ID == persisted.Rotation.ID {
		comparePasswords(ctx, w, w.rotation)
	}
	w.obs.Spec.Restore, w.restorePhase = r.restoreRequest(ctx, defaulted, persisted, w)
	if t := persisted.Op.Restore.Request; persisted.State == machine.Restoring {
		if why := r.refusedLoads.of(vc.UID, t, vc.Generation); why != "" {
			w.obs.Spec.RefusedLoad = machine.RefusedLoad{ID: t, Why: why}
		}
	}
	w.histories = markRestored(vc.Status.Restore, w.obs.Nodes)
	return w, nil
}

// memory is what the reconciler remembers of each cluster, in this process only.
type memory interface {
	Forget(cluster types.UID)
	Remembers(cluster types.UID) bool
}

// memories are everything the reconciler remembers per cluster: the one place a deleted
// cluster is forgotten (finalize). A test checks that every field of the Reconciler that
// remembers clusters is here, and that a finalized cluster leaves nothing behind.
func (r *Reconciler) memories() []memory {
	return []memory{
		&r.pools, &r.passwords, &r.probes, r.prober, &r.acted, &r.answered, &r.live, &r.looks,
		&r.restores, &r.refusedLoads, &r.users, &r.tls, &r.finalWaits,
	}
}

// finalize lets go of a cluster being deleted.
func (r *Reconciler) finalize(ctx context.Context, vc *v1beta1.ValkeyCluster) error {
	for _, m := range r.memories() {
		m.Forget(vc.UID)
	}
	r.Metrics.Forget(vc.Namespace, vc.Name)
	if !controllerutil.ContainsFinalizer(vc, Finalizer) {
		return nil
	}
	controllerutil.RemoveFinalizer(vc, Finalizer)
	if err := r.Client.Update(ctx, vc); err != nil {
		return client.IgnoreNotFound(err)
	}
	logFrom(ctx).Info("cluster deleted; its objects go with it (owner references)")
	// Its ValkeyACLs stay (they are the user's): they say the cluster is gone rather than
	// keep claiming to be applied.
	r.users.WithoutCluster(ctx, client.ObjectKeyFromObject(vc))
	return nil
}

// SetupWithManager registers the controller: the ValkeyCluster (spec changes only: status
// writes of our own must not wake us), the objects it owns, and its pods (readiness, IP and
// existence changes).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.defaults()
	r.pools.opts = r.Options.Valkey
	// The probers stop with the manager: a stopped operator (or one that lost its lease) no
	// longer surveys anything.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		r.prober.stopAll()
		return nil
	})); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1beta1.ValkeyCluster{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&appsv1.StatefulSet{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Secret{}).
		Owns(&policyv1.PodDisruptionBudget{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&networkingv1.NetworkPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToCluster), builder.WithPredicates(podChanged{})).
		Watches(&v1beta1.ValkeyACL{}, handler.EnqueueRequestsFromMapFunc(users.ToCluster), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(r.prober.wake, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.MaxConcurrentReconciles}).
		Complete(r)
}

// podToCluster maps a pod to its ValkeyCluster by label.
func podToCluster(_ context.Context, o client.Object) []ctrl.Request {
	name := o.GetLabels()[kube.LabelCluster]
	if name == "" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}

// observedNodes is a one-line summary of what each node answered, logged with every
// transition so that a decision can be checked against what it was taken on.
func observedNodes(obs machine.Observation) string {
	var b strings.Builder
	for _, n := range obs.Nodes {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		if !n.Reachable {
			fmt.Fprintf(&b, "%s unreachable(%d) pod=%v", n.Name, n.FailedProbes, n.Pod.Exists && n.Pod.Running)
			continue
		}
		v := n.Valkey
		fmt.Fprintf(&b, "%s %s run=%.8s repl=%.8s/%.8s@%d off=%d from=%q link=%v fenced=%v/%v", n.Name, v.Role, v.RunID, v.ReplID, v.ReplID2, v.SecondOffset, v.Offset, v.PrimaryHost, v.LinkUp, v.WritesFenced, v.SyncFenced)
		if s := v.Sealed; !s.At.IsZero() {
			fmt.Fprintf(&b, " sealed=%s unlinked=%v", s.At.Format("15:04:05.000"), s.Unlinked)
		}
	}
	return b.String()
}

// LastLook is what the cluster's last turn observed and decided (zero At: none since this
// process started), for the backups (backups.Clusters).
func (r *Reconciler) LastLook(cluster types.UID) shared.Look { return r.looks.get(cluster) }

// Pool is the connection pool to the cluster's nodes, signed in with password.
func (r *Reconciler) Pool(cluster types.UID, password string) *valkey.Pool {
	return r.pools.get(cluster, password)
}

// Clock names this process's clock (host and start time), once SetupWithManager ran.
func (r *Reconciler) Clock() string {
	r.defaults()
	return r.clock
}

// stores opens the backup stores restores read from.
func (r *Reconciler) stores() shared.Stores {
	return shared.Stores{Reader: r.apiReader(), Ambient: r.Options.AmbientCredentials}
}

// usersTurn is what the ValkeyACL users see of this turn: the nodes they are given to.
func usersTurn(vc *v1beta1.ValkeyCluster, w *world) users.Turn {
	t := users.Turn{Cluster: vc, Pool: w.pool, ProbePassword: w.passwords.Probe}
	for _, n := range w.obs.Nodes {
		t.Nodes = append(t.Nodes, users.Node{Name: n.Name, RunID: n.Valkey.RunID, IP: answeringIP(w, n)})
	}
	return t
}

// apiReader reads past the cache.
func (r *Reconciler) apiReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}
