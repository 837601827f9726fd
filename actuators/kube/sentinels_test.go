package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

func buildTopology(topology v1beta1.Topology) (*v1beta1.ValkeyCluster, Desired) {
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: v1beta1.ValkeyClusterSpec{Topology: topology}}
	v1beta1.SetDefaults(&vc.Spec)
	return vc, Build(vc, metav1.OwnerReference{Name: "c"})
}

// The Sentinel topology's sentinels are objects of their own, whose pods no selector of the
// data pods takes (nor the other way round): the StatefulSets, Services and the operator's
// survey would otherwise count each other's pods.
func TestSentinelPodsAndDataPodsShareNoSelector(t *testing.T) {
	vc, d := buildTopology(v1beta1.TopologySentinel)
	s := d.Sentinels
	if s == nil {
		t.Fatal("a Sentinel topology builds no sentinels")
	}
	if s.PDB == nil || !labels.SelectorFromSet(s.PDB.Spec.Selector.MatchLabels).Matches(labels.Set(s.StatefulSet.Spec.Template.Labels)) || labels.SelectorFromSet(d.PDB.Spec.Selector.MatchLabels).Matches(labels.Set(s.StatefulSet.Spec.Template.Labels)) {
		t.Error("the sentinels have no budget of their own, or the data pods' budget counts them")
	}
	if got := *s.StatefulSet.Spec.Replicas; got != v1beta1.DefaultSentinels {
		t.Errorf("%d sentinels, want the default %d", got, v1beta1.DefaultSentinels)
	}
	sentinelPod := labels.Set(s.StatefulSet.Spec.Template.Labels)
	dataPod := labels.Set(d.StatefulSet.Spec.Template.Labels)
	for what, sel := range map[string]map[string]string{"data StatefulSet": d.StatefulSet.Spec.Selector.MatchLabels, "data Services": d.Headless.Spec.Selector, "data pods' survey": SelectorLabels(vc)} {
		if labels.SelectorFromSet(sel).Matches(sentinelPod) {
			t.Errorf("the %s selector takes the sentinels' pods", what)
		}
	}
	for what, sel := range map[string]map[string]string{"sentinel StatefulSet": s.StatefulSet.Spec.Selector.MatchLabels, "sentinel Service": s.Client.Spec.Selector} {
		if labels.SelectorFromSet(sel).Matches(dataPod) {
			t.Errorf("the %s selector takes the data pods", what)
		}
		if !labels.SelectorFromSet(sel).Matches(sentinelPod) {
			t.Errorf("the %s selector misses the sentinels' pods", what)
		}
	}
	if _, ok := sentinelPod[LabelCluster]; !ok {
		t.Error("the sentinels' pods lack the cluster label the operator's cache selects by")
	}
}

// Each sentinel keeps its file on a volume of its own, copied from the template only when the
// volume has none: Sentinel rewrites it, and a sentinel rebuilt from the template would come
// back as a stranger that may vote twice in one epoch.
func TestEachSentinelStartsFromItsOwnFile(t *testing.T) {
	_, d := buildTopology(v1beta1.TopologySentinel)
	sts := d.Sentinels.StatefulSet
	if len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("%d claim templates, want one volume per sentinel", len(sts.Spec.VolumeClaimTemplates))
	}
	init := sts.Spec.Template.Spec.InitContainers
	if len(init) != 1 || !strings.Contains(strings.Join(init[0].Command, " "), `[ -s "$f" ] ||`) {
		t.Fatalf("the init step does not copy the template only when the file is missing: %v", init)
	}
	c := sts.Spec.Template.Spec.Containers[0]
	if c.Args[0] != "/data/sentinel.conf" {
		t.Errorf("the sentinel starts from %s, not the file on its volume", c.Args[0])
	}
}

// Only the Sentinel topology has sentinels, and only its data nodes start at replica-priority
// 0 (no sentinel promotes a node the operator has not opened).
func TestOnlyTheSentinelTopologyHasSentinels(t *testing.T) {
	for _, topology := range []v1beta1.Topology{v1beta1.TopologyStandalone, v1beta1.TopologyReplication, v1beta1.TopologyCluster} {
		_, d := buildTopology(topology)
		if d.Sentinels != nil {
			t.Errorf("%s builds sentinels", topology)
		}
		if strings.Contains(d.Config.Data["valkey.conf"], "replica-priority") {
			t.Errorf("%s renders replica-priority", topology)
		}
	}
	_, d := buildTopology(v1beta1.TopologySentinel)
	if !strings.Contains(d.Config.Data["valkey.conf"], "replica-priority 0\n") {
		t.Errorf("the Sentinel topology's data nodes do not start at replica-priority 0:\n%s", d.Config.Data["valkey.conf"])
	}
}

// With spec.networkPolicy the data nodes' policy lets the sentinels in on the Valkey ports: they
// watch and reconfigure every node.
func TestTheNetworkPolicyLetsTheSentinelsIn(t *testing.T) {
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: v1beta1.ValkeyClusterSpec{Topology: v1beta1.TopologySentinel, NetworkPolicy: v1beta1.NetworkPolicySpec{Enabled: true}}}
	v1beta1.SetDefaults(&vc.Spec)
	d := Build(vc, metav1.OwnerReference{Name: "c"})
	sentinelPod := labels.Set(d.Sentinels.StatefulSet.Spec.Template.Labels)
	for _, rule := range d.NetworkPolicy.Spec.Ingress {
		for _, from := range rule.From {
			if from.PodSelector != nil && from.NamespaceSelector == nil && labels.SelectorFromSet(from.PodSelector.MatchLabels).Matches(sentinelPod) {
				return
			}
		}
	}
	t.Fatalf("no ingress rule admits the sentinels' pods: %+v", d.NetworkPolicy.Spec.Ingress)
}

// The user's pod labels and annotations reach the sentinels' pods, never over the operator's.
func TestSentinelPodsCarryTheUsersPodMeta(t *testing.T) {
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: v1beta1.ValkeyClusterSpec{Topology: v1beta1.TopologySentinel,
		PodLabels: map[string]string{"team": "shop", "app.kubernetes.io/name": "mine"}, PodAnnotations: map[string]string{"mesh": "off"}}}
	v1beta1.SetDefaults(&vc.Spec)
	tmpl := Build(vc, metav1.OwnerReference{Name: "c"}).Sentinels.StatefulSet.Spec.Template
	if tmpl.Labels["team"] != "shop" || tmpl.Annotations["mesh"] != "off" {
		t.Errorf("the user's pod meta is missing: labels %v, annotations %v", tmpl.Labels, tmpl.Annotations)
	}
	if tmpl.Labels["app.kubernetes.io/name"] != "valkey-sentinel" {
		t.Errorf("a user label overrode the selector: %v", tmpl.Labels)
	}
}

// The sentinels' template carries its revision, which whatever a sentinel's pod runs changes
// (its image, resources, pod labels and annotations) and nothing else does (the data pods'
// settings, the sentinels' count); an EnsureObjects decided for another revision is refused.
func TestTheSentinelsTemplateHasARevisionOfItsOwn(t *testing.T) {
	build := func(edit func(*v1beta1.ValkeyCluster)) Desired {
		vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: v1beta1.ValkeyClusterSpec{Topology: v1beta1.TopologySentinel}}
		v1beta1.SetDefaults(&vc.Spec)
		edit(vc)
		return Build(vc, metav1.OwnerReference{Name: "c"})
	}
	base := build(func(*v1beta1.ValkeyCluster) {})
	rev := base.Sentinels.Revision
	if rev == "" || base.Sentinels.StatefulSet.Spec.Template.Annotations[AnnotationRevision] != rev {
		t.Fatalf("revision %q, template annotation %q", rev, base.Sentinels.StatefulSet.Spec.Template.Annotations[AnnotationRevision])
	}
	for what, edit := range map[string]func(*v1beta1.ValkeyCluster){
		"image": func(vc *v1beta1.ValkeyCluster) { vc.Spec.Image = "valkey/valkey:9.1" },
		"resources": func(vc *v1beta1.ValkeyCluster) {
			vc.Spec.Sentinel.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("11m")}
		},
		"pod labels":      func(vc *v1beta1.ValkeyCluster) { vc.Spec.PodLabels = map[string]string{"team": "shop"} },
		"pod annotations": func(vc *v1beta1.ValkeyCluster) { vc.Spec.PodAnnotations = map[string]string{"mesh": "off"} },
	} {
		if got := build(edit).Sentinels.Revision; got == rev {
			t.Errorf("a changed %s leaves the sentinels' revision at %s", what, rev)
		}
	}
	for what, edit := range map[string]func(*v1beta1.ValkeyCluster){
		"sentinel count": func(vc *v1beta1.ValkeyCluster) { vc.Spec.Sentinel.Replicas = 5 },
		"data resources": func(vc *v1beta1.ValkeyCluster) {
			vc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("11m")}
		},
	} {
		if got := build(edit).Sentinels.Revision; got != rev {
			t.Errorf("a changed %s changes the sentinels' revision to %s: every sentinel would restart", what, got)
		}
	}
	if _, err := ForAction(base, machine.EnsureObjects{Shards: 1, Replicas: 2, Revision: base.Revision, Sentinels: 3, SentinelRevision: "other"}); err == nil {
		t.Error("an EnsureObjects decided for another sentinels' revision was carried out")
	}
	if _, err := ForAction(base, machine.EnsureObjects{Shards: 1, Replicas: 2, Revision: base.Revision, Sentinels: 3, SentinelRevision: rev}); err != nil {
		t.Errorf("an EnsureObjects at the sentinels' revision was refused: %v", err)
	}
}
