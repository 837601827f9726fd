package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// The sentinels of the Sentinel topology: a StatefulSet whose pods each run valkey-sentinel
// on a small volume of its own, a headless Service for their stable names, and the client
// Service <name>-sentinel on 26379 that Sentinel-aware clients are given. Each sentinel starts
// from the template in the auth Secret (it holds the users' hashes and the password the
// sentinels give each other), copied onto its volume the first time only: Sentinel rewrites
// its file on every change of its state, and one rebuilt from the template would come back
// with a new id and forget the epochs it voted in (the others would count its old id as a
// voter for good, and it could vote twice in one epoch).

// Sentinels are a Sentinel topology's sentinel objects (nil outside that topology).
type Sentinels struct {
	StatefulSet      *appsv1.StatefulSet
	Headless, Client *corev1.Service
	// PDB lets a drain take one sentinel at a time (nil when spec.podDisruptionBudget is
	// disabled): two of three gone is no majority, and no failover.
	PDB *policyv1.PodDisruptionBudget
	// Scaled is set by ForAction, which gives StatefulSet the machine's count: only an
	// EnsureObjects changes how many sentinels run (Apply keeps the count otherwise).
	Scaled bool `json:"-"`
	// Revision identifies the sentinels' pod template (AnnotationRevision on it): a sentinel
	// whose pod has another is restarted by the machine (machine.RollSentinel), one at a time.
	Revision string
}

// SentinelSetName is the sentinels' StatefulSet's name; its pods are <name>-sentinel-<i>
// (which no data pod name parses as: theirs end in the ordinal right after the cluster's
// name). SentinelServiceName is the client Service's.
func SentinelSetName(vc *v1beta1.ValkeyCluster) string     { return vc.Name + "-sentinel" }
func SentinelServiceName(vc *v1beta1.ValkeyCluster) string { return vc.Name + "-sentinel" }
func sentinelHeadlessName(vc *v1beta1.ValkeyCluster) string {
	return vc.Name + "-sentinel-nodes"
}

// SentinelSelectorLabels select the sentinels' pods; they share no selector with the data
// pods (app.kubernetes.io/name differs), so neither StatefulSet, Service nor survey takes the
// other's pods.
func SentinelSelectorLabels(vc *v1beta1.ValkeyCluster) map[string]string {
	return selectorOf(vc, "valkey-sentinel")
}

func sentinelLabels(vc *v1beta1.ValkeyCluster) map[string]string {
	return managed(SentinelSelectorLabels(vc))
}

// sentinelClaimTemplate is the sentinels' claim template: their claims are
// sentinel-<name>-sentinel-<i>, which no data claim (data-<pod>) is, whatever the clusters are
// called: a cluster named <name>-sentinel never takes a sentinel's volume, nor the other way.
const sentinelClaimTemplate = "sentinel"

// buildSentinels is the Sentinel topology's sentinels (nil for the other topologies). vc is
// defaulted (spec.sentinel set).
func buildSentinels(vc *v1beta1.ValkeyCluster, owner metav1.OwnerReference, names Names) *Sentinels {
	s := vc.Spec.Sentinel
	if vc.Spec.Topology != v1beta1.TopologySentinel || s == nil {
		return nil
	}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: vc.Namespace, Labels: sentinelLabels(vc), OwnerReferences: []metav1.OwnerReference{owner}}
	}
	port := []corev1.ServicePort{{Name: "sentinel", Port: valkey.SentinelPort, TargetPort: intstr.FromString("sentinel")}}
	headless := &corev1.Service{ObjectMeta: meta(sentinelHeadlessName(vc)), Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone, Selector: SentinelSelectorLabels(vc), Ports: port, PublishNotReadyAddresses: true,
	}}
	clientSvc := &corev1.Service{ObjectMeta: meta(SentinelServiceName(vc)), Spec: corev1.ServiceSpec{Selector: SentinelSelectorLabels(vc), Ports: port}}
	size := resource.MustParse(v1beta1.DefaultSentinelStorageSize)
	if s.Storage.Size != nil {
		size = *s.Storage.Size
	}
	tmpl := sentinelPodTemplate(vc, names)
	// The revision covers the whole template, its labels and annotations too (a pod's are
	// set when it is made); encoding/json writes map keys sorted.
	h := sha256.New()
	_ = json.NewEncoder(h).Encode(tmpl)
	revision := hex.EncodeToString(h.Sum(nil))[:16]
	tmpl.Annotations[AnnotationRevision] = revision
	sts := &appsv1.StatefulSet{ObjectMeta: meta(SentinelSetName(vc)), Spec: appsv1.StatefulSetSpec{
		Replicas:            ptr.To(s.Replicas),
		ServiceName:         headless.Name,
		Selector:            &metav1.LabelSelector{MatchLabels: SentinelSelectorLabels(vc)},
		PodManagementPolicy: appsv1.ParallelPodManagement,
		// A changed template (image, resources, pod labels) reaches a sentinel when the
		// machine restarts it, one at a time and never in the middle of a failover: the
		// StatefulSet controller rolls nothing by itself.
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
		// A sentinel's file is worth nothing without its cluster, and a file kept past it
		// would hold the passwords and the primary of a cluster that is gone: a cluster made
		// again under the same name would find its sentinels locking it out. The claims go
		// with the StatefulSet, and with a removed sentinel (the others forget its id).
		PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
			WhenScaled:  appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
		},
		Template: tmpl,
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: sentinelClaimTemplate, Labels: SentinelSelectorLabels(vc)},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: s.Storage.StorageClassName,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			},
		}},
	}}
	out := &Sentinels{StatefulSet: sts, Headless: headless, Client: clientSvc, Revision: revision}
	if vc.Spec.PodDisruptionBudget.IsEnabled() {
		out.PDB = &policyv1.PodDisruptionBudget{ObjectMeta: meta(SentinelSetName(vc)), Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: SentinelSelectorLabels(vc)},
		}}
	}
	return out
}

func sentinelPodTemplate(vc *v1beta1.ValkeyCluster, names Names) corev1.PodTemplateSpec {
	restricted := restrictedContainer()
	data := corev1.VolumeMount{Name: sentinelClaimTemplate, MountPath: valkey.DataDir}
	// Sentinel needs no long grace: it keeps nothing in memory its file does not hold.
	spec := basePodSpec(vc, 10)
	spec.InitContainers = []corev1.Container{{
		Name: "sentinel-file", Image: vc.Spec.Image, ImagePullPolicy: vc.Spec.ImagePullPolicy,
		Command:         []string{"sh", "-c", valkey.SentinelInitScript},
		SecurityContext: restricted,
		VolumeMounts:    []corev1.VolumeMount{data, {Name: "template", MountPath: valkey.SentinelTemplateDir, ReadOnly: true}},
	}}
	spec.Containers = []corev1.Container{{
		Name: "sentinel", Image: vc.Spec.Image, ImagePullPolicy: vc.Spec.ImagePullPolicy,
		Command:         []string{"valkey-sentinel"},
		Args:            valkey.SentinelArgs(),
		SecurityContext: restricted,
		Env: []corev1.EnvVar{
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		},
		Ports:                    []corev1.ContainerPort{{Name: "sentinel", ContainerPort: valkey.SentinelPort}},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		Resources:                vc.Spec.Sentinel.Resources,
		// A sentinel answers only users with a password; that it listens is what the
		// probes can tell without one.
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("sentinel")}},
			PeriodSeconds: 2, TimeoutSeconds: 2, FailureThreshold: 3,
		},
		LivenessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("sentinel")}},
			PeriodSeconds: 10, TimeoutSeconds: 5, FailureThreshold: 6, InitialDelaySeconds: 10,
		},
		VolumeMounts: []corev1.VolumeMount{data},
	}}
	spec.Volumes = []corev1.Volume{{Name: "template", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: names.Auth, DefaultMode: ptr.To(int32(0o440)),
		Items: []corev1.KeyToPath{{Key: valkey.SentinelTemplateKey, Path: valkey.SentinelTemplateKey}},
	}}}}
	if vc.Spec.Affinity == nil {
		// Sentinels on one host fail together: a quorum must not share one.
		spec.TopologySpreadConstraints = v1beta1.DefaultTopologySpreadConstraints(&metav1.LabelSelector{MatchLabels: SentinelSelectorLabels(vc)})
	} else {
		spec.Affinity = vc.Spec.Affinity
	}
	// The user's pod labels and annotations (cost centres, mesh settings) go on the sentinels'
	// pods too, under the operator's own.
	labels := userKeys(vc.Spec.PodLabels, sentinelLabels(vc))
	maps.Copy(labels, sentinelLabels(vc))
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: podAnnotations(vc)}, Spec: spec}
}

// sentinelPDB is the sentinels' budget (nil: none).
func (d Desired) sentinelPDB() *policyv1.PodDisruptionBudget {
	if d.Sentinels == nil {
		return nil
	}
	return d.Sentinels.PDB
}
