package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// Desired is every owned object but the auth Secret, as it should be now.
type Desired struct {
	Config   *corev1.ConfigMap
	Headless *corev1.Service
	Client   *corev1.Service
	Replicas *corev1.Service
	// StatefulSet is the pod template and claims every shard's StatefulSet is made from
	// (ShardSet), at the spec's pod count; in a replication group it is the one StatefulSet.
	StatefulSet *appsv1.StatefulSet
	// StatefulSets are the StatefulSets an EnsureObjects asks for (ForAction), one per shard.
	StatefulSets []*appsv1.StatefulSet
	// Names are the owned objects' names.
	Names Names
	PDB   *policyv1.PodDisruptionBudget // nil when spec.podDisruptionBudget.enabled=false
	// PDBName is the budget's name, also when it is disabled (Apply deletes ours then).
	PDBName string
	// NetworkPolicy is spec.networkPolicy's (nil when disabled: Apply deletes ours then).
	NetworkPolicy *networkingv1.NetworkPolicy
	// BusPolicy guards a Cluster topology's cluster bus, whatever spec.networkPolicy says
	// (nil for the other topologies: Apply deletes ours then).
	BusPolicy *networkingv1.NetworkPolicy
	// Certificate is the cert-manager Certificate spec.tls.issuerRef asks for (nil without one:
	// Apply deletes ours then, if cert-manager is installed).
	Certificate *unstructured.Unstructured
	// Revision identifies the pod template (see AnnotationRevision).
	Revision string
	// Sentinels are the Sentinel topology's sentinels (nil for the other topologies).
	Sentinels *Sentinels `json:",omitempty"`
	// Live holds the directives that take effect without a restart, with their values: they
	// are in the ConfigMap but not in the revision, and the operator sets them on the running
	// processes (CONFIG SET), so changing one rolls nothing.
	Live map[string]string
}

// ValkeyUID is the uid and gid of the official Valkey image's valkey user, which the pods
// run as.
const ValkeyUID = int64(999)

// Persistence tells whether the profile keeps data on disk (vc defaulted).
func Persistence(vc *v1beta1.ValkeyCluster) bool { return vc.Spec.Profile != v1beta1.ProfileCache }

// FsyncAlways reports whether the nodes fsync every write before they acknowledge it
// (appendfsync always in spec.config): only then does a primary killed and restarted from its
// append-only file hold every write it acknowledged (see docs/failover.md).
func FsyncAlways(vc *v1beta1.ValkeyCluster) bool {
	for k, v := range vc.Spec.Config {
		if strings.EqualFold(k, "appendfsync") {
			return Persistence(vc) && strings.EqualFold(strings.TrimSpace(string(v)), "always")
		}
	}
	return false
}

// Build computes the desired objects. vc's spec must be defaulted (v1beta1.SetDefaults):
// the reconciler defaults it once per turn and passes it down, so no default has a second
// copy here.
func Build(vc *v1beta1.ValkeyCluster, owner metav1.OwnerReference) Desired {
	return BuildMounting(vc, owner, v1beta1.TLSSecretName(vc))
}

// BuildMounting is Build with the pods mounting tlsSecret for their certificate (with TLS on)
// instead of spec.tls's Secret. The Secret is part of the pod template, so of the revision:
// the reconciler keeps the one the pods mount while the operator refuses the spec's, and
// nothing rolls onto a Secret it refused (see operator/reconcile/cluster's tlsGate).
func BuildMounting(vc *v1beta1.ValkeyCluster, owner metav1.OwnerReference, tlsSecret string) Desired {
	names := NamesOf(vc)
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: vc.Namespace, Labels: CommonLabels(vc), OwnerReferences: []metav1.OwnerReference{owner}}
	}
	extra := make(map[string]string, len(vc.Spec.Config))
	for k, v := range vc.Spec.Config {
		extra[k] = string(v)
	}
	maxMemory, _ := v1beta1.MaxMemory(&vc.Spec)
	// maxmemory derived from the memory limit belongs to the pod, not to the cluster: it is
	// a server argument of the pod template, so each pod gets the value of its own limit when
	// it rolls (a live CONFIG SET on every node at once would put maxmemory above the limit
	// of the pods not rolled yet, when the limit grows). Set in spec.config, it is the user's
	// value for every node, applied live.
	var podMaxMemory string
	if _, configured := v1beta1.LookupConfig(vc.Spec.Config, "maxmemory"); !configured {
		podMaxMemory, maxMemory = maxMemory, ""
	}
	spec := &vc.Spec
	extra["min-replicas-to-write"] = fmt.Sprint(v1beta1.MinReplicasToWrite(spec))
	extra["min-replicas-max-lag"] = fmt.Sprint(spec.Durability.MaxLagSeconds)
	tlsMode := TLSModeOf(vc)
	in := valkey.ConfigInput{Profile: v1beta1.ProfileDirectives(spec.Profile), MaxMemory: maxMemory, Extra: extra, Cluster: names.Sharded, TLS: tlsMode, TLSClientAuth: spec.TLS.ClientCertificates,
		Sentinel: spec.Topology == v1beta1.TopologySentinel}
	conf := valkey.RenderConfig(in)
	restartIn, live := valkey.Split(in)
	cm := &corev1.ConfigMap{ObjectMeta: meta(names.Config), Data: map[string]string{"valkey.conf": conf}}
	var port []corev1.ServicePort
	if tlsMode != valkey.TLSOnly {
		port = append(port, corev1.ServicePort{Name: "valkey", Port: valkey.Port, TargetPort: intstr.FromString("valkey")})
	}
	if tlsMode != valkey.TLSNone {
		port = append(port, corev1.ServicePort{Name: "valkey-tls", Port: valkey.TLSPort, TargetPort: intstr.FromString("valkey-tls")})
	}
	headless := &corev1.Service{ObjectMeta: meta(names.Headless), Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone, Selector: SelectorLabels(vc), Ports: port,
		// Peers and the operator find nodes before they are ready.
		PublishNotReadyAddresses: true,
	}}
	withRole := func(role string) map[string]string {
		l := SelectorLabels(vc)
		l[LabelRole] = role
		return l
	}
	clientSvc := &corev1.Service{ObjectMeta: meta(names.Client), Spec: corev1.ServiceSpec{Selector: withRole(RolePrimary), Ports: port}}
	replicasSvc := &corev1.Service{ObjectMeta: meta(names.Replicas), Spec: corev1.ServiceSpec{Selector: withRole(RoleReplica), Ports: port}}
	withServiceSpec(vc, clientSvc, replicasSvc)

	tmpl := podTemplate(vc, names, tlsSecret)
	if podMaxMemory != "" {
		tmpl.Spec.Containers[0].Args = append(tmpl.Spec.Containers[0].Args, "--maxmemory", podMaxMemory)
	}
	if at := vc.Annotations[v1beta1.AnnotationRestartRequested]; at != "" {
		// Part of what the revision hashes: a new request is a new revision, rolled safely.
		tmpl.Spec.Containers[0].Env = append(tmpl.Spec.Containers[0].Env, corev1.EnvVar{Name: "VALKEY_RESTART_REQUESTED", Value: at})
	}
	// The revision covers everything that needs a restart to take effect: the pod template
	// and the rendered configuration without the live directives.
	h := sha256.New()
	_ = json.NewEncoder(h).Encode(tmpl.Spec)
	h.Write([]byte(valkey.RenderConfig(restartIn)))
	hashPodMeta(h, vc)
	revision := hex.EncodeToString(h.Sum(nil))[:16]
	tmpl.Annotations = podAnnotations(vc)
	tmpl.Annotations[AnnotationRevision] = revision
	if tlsMode != valkey.TLSNone {
		tmpl.Annotations[AnnotationTLS] = string(tlsMode)
	}

	size := spec.StorageSizeOrDefault()
	sts := &appsv1.StatefulSet{ObjectMeta: meta(names.StatefulSet), Spec: appsv1.StatefulSetSpec{
		Replicas:            ptr.To(replicasOf(vc)),
		ServiceName:         names.Headless,
		Selector:            &metav1.LabelSelector{MatchLabels: SelectorLabels(vc)},
		PodManagementPolicy: appsv1.ParallelPodManagement,
		// The operator decides when a pod restarts (replicas first, the primary last, after a
		// hand-over): the StatefulSet controller never rolls pods by itself.
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
		// Claims outlive the cluster (deleting it never deletes data). A scale-down deletes the
		// claims of the removed replicas: their data is a copy of the primary's, and a stale copy
		// brought back by a later scale-up could hold writes of a history the shard left behind.
		PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			WhenScaled:  appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
		},
		Template: tmpl,
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: claimTemplate, Labels: SelectorLabels(vc)},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: vc.Spec.Storage.StorageClassName,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			},
		}},
	}}
	d := Desired{Config: cm, Headless: headless, Client: clientSvc, Replicas: replicasSvc, StatefulSet: sts, Names: names, Revision: revision, Live: live, PDBName: names.PDB,
		NetworkPolicy: networkPolicy(vc, meta(names.Policy)), BusPolicy: busPolicy(vc, meta(names.BusPolicy)), Certificate: certificate(vc, names, meta(names.Certificate)),
		Sentinels: buildSentinels(vc, owner, names)}
	if spec.PodDisruptionBudget.IsEnabled() {
		d.PDB = &policyv1.PodDisruptionBudget{ObjectMeta: meta(names.PDB), Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: SelectorLabels(vc)},
		}}
	}
	return d
}

func replicasOf(vc *v1beta1.ValkeyCluster) int32 { return vc.Spec.PodsPerShard() }

func podTemplate(vc *v1beta1.ValkeyCluster, names Names, tlsSecret string) corev1.PodTemplateSpec {
	image := vc.Spec.Image
	spec := basePodSpec(vc, 30)
	spec.Affinity, spec.TopologySpreadConstraints = vc.Spec.Affinity, vc.Spec.TopologySpreadConstraints
	spec.Containers = []corev1.Container{{
		Name:            "valkey",
		Image:           image,
		ImagePullPolicy: vc.Spec.ImagePullPolicy,
		Command:         valkey.ServerCommand(names.Sharded),
		Args:            valkey.ServerArgs(names.Sharded),
		SecurityContext: restrictedContainer(),
		Env: []corev1.EnvVar{
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		},
		Ports: []corev1.ContainerPort{{Name: "valkey", ContainerPort: valkey.Port}},
		// A server that refuses its configuration says why on its output: that becomes the
		// termination message, which the operator shows in status and Events.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		Resources:                vc.Spec.Resources,
		// Ready = the process answers and has loaded its data. Whether it may take writes
		// is the operator's business (role label and ACL fences), not the probe's.
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: probeCommand("")}},
			PeriodSeconds: 2, TimeoutSeconds: 2, FailureThreshold: 3,
		},
		// A pod deleted on purpose while its node is a primary with replicas stays up until
		// the operator has handed the role over (primary-leaving), at most PreStopHold.
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: preStopCommand("")}}},
		LivenessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("valkey")}},
			PeriodSeconds: 10, TimeoutSeconds: 5, FailureThreshold: 6, InitialDelaySeconds: 10,
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: claimTemplate, MountPath: valkey.DataDir},
			{Name: "config", MountPath: valkey.ConfigDir},
			{Name: "auth", MountPath: valkey.AuthDir, ReadOnly: true},
		},
	}}
	spec.Volumes = []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: names.Config}}}},
		{Name: "auth", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: names.Auth, DefaultMode: ptr.To(int32(0o400)),
			Items: []corev1.KeyToPath{{Key: valkey.AuthFileKey, Path: valkey.AuthFileKey}, {Key: KeyProbePassword, Path: KeyProbePassword}}}}},
	}
	if mode := TLSModeOf(vc); mode != valkey.TLSNone {
		withTLS(&spec, tlsSecret, mode)
	}
	if len(spec.TopologySpreadConstraints) == 0 && spec.Affinity == nil {
		spec.TopologySpreadConstraints = v1beta1.DefaultTopologySpreadConstraints(&metav1.LabelSelector{MatchLabels: SelectorLabels(vc)})
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels(vc)}, Spec: spec}
}

// probeFile is where the readiness probe reads its password: the auth Secret's probe key,
// beside the users' file (which holds hashes and the replication password, no other text).
const probeFile = valkey.AuthDir + "/" + KeyProbePassword

// probeCommand is the readiness probe: PING as the probe's own user (valkey.UserProbe), with
// valkey-cli's connection arguments cli.
//
// Why a user of its own, with its password read from a file when the probe runs:
//   - Not the operator's password from env (what it was): a kubelet resolves a container's env
//     once, when it starts, and every exec probe runs with that. After a rotation of the
//     operator's password retired the old one, every pod started before it probed with a
//     password the nodes refuse (WRONGPASS) and went NotReady: Services dropped every endpoint,
//     the PodDisruptionBudget counted them down, rolls stopped.
//   - Not the operator's password from a mounted file either: a kubelet refreshes a Secret
//     volume a minute or more after the Secret changed (its sync period plus its cache's TTL),
//     and a rotation may retire the old password at once (retire-old-passwords; no grace period
//     is enforced), so a probe would read a refused password for that long.
//   - The probe user's password never rotates, so neither delay matters; it opens nothing but
//     PING (no key, no channel, no other command), so it holds no power worth rotating, and the
//     operator's password, as powerful as an administrator's, is no longer in the container at
//     all. Read from the file on every run, a password put back after the Secret lost it (given
//     to running nodes live, see kube.EnsureAuth) reaches the probe without a restart.
//
// valkey-cli reads the password from REDISCLI_AUTH, set by the shell's read builtin: it is never
// on a command line (every process of the node can read those in /proc). PING answers LOADING
// while the data loads: Ready = the process answers and has loaded its data.
func probeCommand(cli string) []string {
	return []string{"sh", "-c", `IFS= read -r REDISCLI_AUTH < ` + probeFile + `; export REDISCLI_AUTH; ` +
		cliCommand(cli) + ` --user ` + valkey.UserProbe + ` ping | grep -q PONG`}
}

// cliCommand is valkey-cli with the given connection options: none for the plain port on
// the pod's localhost, where the server listens too (ServerArgs binds every address).
func cliCommand(opts string) string {
	if opts == "" {
		return "valkey-cli"
	}
	return "valkey-cli " + opts
}

// PreStopHold bounds how long a deleted pod whose node is a primary with replicas waits for
// the operator to hand its role over before it stops anyway (an operator that is down, a shard
// whose replicas are behind). It leaves most of the 30 s grace period to Valkey's shutdown.
const PreStopHold = 15 * time.Second

// PreStopLinger is how long the hook still holds a pod whose node it held as a primary once
// the node is no longer one (handed over): the operator then sees the node follow its new
// primary, the hand-over's own evidence, before the pod stops (found by the simulator: a pod
// that stopped at once came back as a restarted primary, and the machine failed over from the
// primary it had just handed over to).
const PreStopLinger = 2 * time.Second

// preStopCommand is the valkey container's preStop hook: while the node is a primary with
// connected replicas (ROLE lists them; the probe user may run ROLE and PING, nothing else),
// wait, at most PreStopHold; then the kubelet sends SIGTERM. The operator sees the pod
// terminating with its process still the primary and hands the role over (primary-leaving):
// the node turns replica, ROLE says so, and the pod stops as a replica instead of costing a
// failover; once it is, the hook lingers PreStopLinger. Anything else (a replica, a primary
// without replicas, a node that does not answer or refuses ROLE) returns at once. The password
// is read as the readiness probe reads it.
func preStopCommand(cli string) []string {
	return []string{"sh", "-c", `IFS= read -r REDISCLI_AUTH < ` + probeFile + `; export REDISCLI_AUTH; ` +
		fmt.Sprintf(`end=$(( $(date +%%s) + %d )); held=; `, int(PreStopHold.Seconds())) +
		`while [ "$(date +%s)" -lt "$end" ]; do ` +
		`set -- $(` + cliCommand(cli) + ` --user ` + valkey.UserProbe + ` role 2>/dev/null); ` +
		`if [ "$1" = master ] && [ $# -gt 2 ]; then held=1; sleep 0.1; continue; fi; ` +
		fmt.Sprintf(`[ -z "$held" ] || sleep %d; exit 0; done`, int(PreStopLinger.Seconds()))}
}

// ShardSet is shard s's StatefulSet: the template's, named and labelled for the shard in a
// Cluster topology, where a shard's pods must not share a host (required anti-affinity on
// the hostname, unless spec.affinity says otherwise): losing one host then loses at most one
// copy of each shard's slots.
func (d Desired) ShardSet(s int) *appsv1.StatefulSet {
	sts := d.StatefulSet.DeepCopy()
	if !d.Names.Sharded {
		return sts
	}
	shard := strconv.Itoa(s)
	sts.Name = d.Names.ShardSet(s)
	withShard := func(l map[string]string) map[string]string {
		out := maps.Clone(l)
		out[LabelShard] = shard
		return out
	}
	sts.Labels = withShard(sts.Labels)
	sts.Spec.Selector = &metav1.LabelSelector{MatchLabels: withShard(sts.Spec.Selector.MatchLabels)}
	sts.Spec.Template.Labels = withShard(sts.Spec.Template.Labels)
	for i := range sts.Spec.VolumeClaimTemplates {
		sts.Spec.VolumeClaimTemplates[i].Labels = withShard(sts.Spec.VolumeClaimTemplates[i].Labels)
	}
	if sts.Spec.Template.Spec.Affinity == nil {
		sts.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: withShard(sts.Spec.Selector.MatchLabels)},
				TopologyKey:   v1beta1.HostnameTopologyKey,
			}},
		}}
	}
	return sts
}

// ForAction is d with the StatefulSets the machine's EnsureObjects asks for, one per shard:
// their pod count is the action's (the machine holds a scale-down back while it is unsafe,
// whatever the spec says), and their template must be at the action's revision. A template
// built from a spec that changed since the decision is another revision: the action is
// refused, and the next turn decides again.
func ForAction(d Desired, a machine.EnsureObjects) (Desired, error) {
	if !d.Names.Sharded && a.Shards != 1 {
		return d, fmt.Errorf("%d shards asked of a replication group, which has one", a.Shards)
	}
	if a.Revision != d.Revision {
		return d, fmt.Errorf("the action is for revision %s, the spec now builds %s: deciding again", a.Revision, d.Revision)
	}
	d.StatefulSets = nil
	for s := 0; s < a.Shards; s++ {
		sts := d.ShardSet(s)
		sts.Spec.Replicas = ptr.To(int32(1 + a.Replicas))
		if a.Replicas == machine.StoppedReplicas {
			// A hibernation: no pod, every claim kept. whenScaled Delete would delete each
			// claim with its pod; both fields change in the same update, so the StatefulSet
			// controller never sees the stop under the old policy.
			sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
		}
		d.StatefulSets = append(d.StatefulSets, sts)
	}
	if d.Sentinels != nil && a.SentinelRevision != "" && a.SentinelRevision != d.Sentinels.Revision {
		return d, fmt.Errorf("the action is for the sentinels' revision %s, the spec now builds %s: deciding again", a.SentinelRevision, d.Sentinels.Revision)
	}
	if d.Sentinels != nil && a.Sentinels > 0 {
		s := *d.Sentinels
		s.StatefulSet = s.StatefulSet.DeepCopy()
		s.StatefulSet.Spec.Replicas = ptr.To(int32(a.Sentinels))
		s.Scaled = true
		d.Sentinels = &s
	}
	return d, nil
}

// TLSModeOf is how the spec asks the nodes to accept connections.
func TLSModeOf(vc *v1beta1.ValkeyCluster) valkey.TLSMode {
	switch vc.Spec.TLS.Mode {
	case v1beta1.TLSPlainAndTLS:
		return valkey.TLSBoth
	case v1beta1.TLSOnly:
		return valkey.TLSOnly
	}
	return valkey.TLSNone
}

// tlsVolume is the pod volume of the serving certificate.
const tlsVolume = "tls"

// MountedTLSSecret is the Secret a pod spec (a pod's or a template's) mounts its serving
// certificate from ("" when it mounts none).
func MountedTLSSecret(spec *corev1.PodSpec) string {
	for _, v := range spec.Volumes {
		if v.Name == tlsVolume && v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	return ""
}

// withTLS mounts the serving certificate (Secret secret) and opens the TLS port; in TLSOnly
// the probes use TLS (nothing listens in plain), verifying the node against the CA.
func withTLS(spec *corev1.PodSpec, secret string, mode valkey.TLSMode) {
	c := &spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: tlsVolume, MountPath: valkey.TLSDir, ReadOnly: true})
	// Group-readable: Valkey runs as its image's user, the files belong to the pod's fsGroup.
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: tlsVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret, DefaultMode: ptr.To(int32(0o440)),
		Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "tls.key"}, {Key: "ca.crt", Path: "ca.crt"}},
	}}})
	tlsPort := corev1.ContainerPort{Name: "valkey-tls", ContainerPort: valkey.TLSPort}
	if mode == valkey.TLSBoth {
		c.Ports = append(c.Ports, tlsPort)
		return
	}
	c.Ports = []corev1.ContainerPort{tlsPort}
	cli := fmt.Sprintf(`--tls --cacert %[1]s/ca.crt --cert %[1]s/tls.crt --key %[1]s/tls.key -p %[2]d`, valkey.TLSDir, valkey.TLSPort)
	c.ReadinessProbe.Exec.Command = probeCommand(cli)
	c.Lifecycle.PreStop.Exec.Command = preStopCommand(cli)
	c.LivenessProbe.TCPSocket.Port = intstr.FromString("valkey-tls")
}
