package v1alpha1

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// The round trips cannot tell a mapping that is wrong the same way in both directions (say,
// replicas copied as they are); these tests pin what each renamed or recounted field means.

func toHub(t *testing.T, in *ValkeyCluster) *v1beta1.ValkeyCluster {
	t.Helper()
	out := &v1beta1.ValkeyCluster{}
	if err := in.ConvertTo(out); err != nil {
		t.Fatal(err)
	}
	return out
}

func fromHub(t *testing.T, in *v1beta1.ValkeyCluster) *ValkeyCluster {
	t.Helper()
	out := &ValkeyCluster{}
	if err := out.ConvertFrom(in); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReplicasCountReplicasInV1beta1(t *testing.T) {
	for _, c := range []struct {
		topology Topology
		pods     int32 // v1alpha1: pods of a shard, the primary included
		replicas int32 // v1beta1: replicas of its primary
	}{
		{TopologyStandalone, 1, 0},
		{TopologyReplication, 3, 2},
		{TopologyReplication, 1, 0},
		{TopologyCluster, 2, 1},
		{"", 0, 2}, // unset in v1alpha1 is its CRD default, three pods
	} {
		hub := toHub(t, &ValkeyCluster{Spec: ValkeyClusterSpec{Topology: c.topology, Replicas: c.pods}})
		if hub.Spec.Replicas == nil || *hub.Spec.Replicas != c.replicas {
			t.Errorf("%s with %d pods: v1beta1 replicas %v, want %d", c.topology, c.pods, hub.Spec.Replicas, c.replicas)
		}
	}
	for _, c := range []struct {
		topology v1beta1.Topology
		replicas *int32
		pods     int32
	}{
		{v1beta1.TopologyStandalone, nil, 1},
		{v1beta1.TopologyReplication, nil, 2},
		{v1beta1.TopologyCluster, nil, 2},
		{"", nil, 2},
		{v1beta1.TopologyReplication, ptr.To[int32](0), 1},
		{v1beta1.TopologyCluster, ptr.To[int32](3), 4},
	} {
		spoke := fromHub(t, &v1beta1.ValkeyCluster{Spec: v1beta1.ValkeyClusterSpec{Topology: c.topology, Replicas: c.replicas}})
		if spoke.Spec.Replicas != c.pods {
			t.Errorf("%s with replicas %v: v1alpha1 replicas %d, want %d pods", c.topology, ptr.Deref(c.replicas, -1), spoke.Spec.Replicas, c.pods)
		}
	}
}

func TestAnUnsetCountStaysUnsetUnlessAV1alpha1ClientChangedIt(t *testing.T) {
	spoke := fromHub(t, &v1beta1.ValkeyCluster{Spec: v1beta1.ValkeyClusterSpec{Topology: v1beta1.TopologyReplication}})
	if got := toHub(t, spoke.DeepCopy()).Spec.Replicas; got != nil {
		t.Errorf("unchanged: replicas %d, want unset", *got)
	}
	spoke.Spec.Replicas = 4
	if got := toHub(t, spoke).Spec.Replicas; got == nil || *got != 3 {
		t.Errorf("scaled to 4 pods in v1alpha1: replicas %v, want 3", got)
	}
}

func TestStorageSizeDefaultsByProfile(t *testing.T) {
	for profile, want := range map[v1beta1.Profile]string{v1beta1.ProfileDurable: "10Gi", v1beta1.ProfileCache: "1Gi", "": "10Gi"} {
		spoke := fromHub(t, &v1beta1.ValkeyCluster{Spec: v1beta1.ValkeyClusterSpec{Profile: profile}})
		if spoke.Spec.Storage.Size == nil || spoke.Spec.Storage.Size.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("profile %q with no size reads as %v in v1alpha1, want %s", profile, spoke.Spec.Storage.Size, want)
		}
		if back := toHub(t, spoke); back.Spec.Storage.Size != nil {
			t.Errorf("profile %q: the unset size came back as %v", profile, back.Spec.Storage.Size)
		}
	}
	// A running v1alpha1 cluster keeps its volumes: its size (1Gi by v1alpha1's default)
	// is written out in v1beta1, whose default would be 10Gi.
	hub := toHub(t, &ValkeyCluster{Spec: ValkeyClusterSpec{Profile: ProfileDurable}})
	if hub.Spec.Storage.Size == nil || hub.Spec.Storage.Size.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("a v1alpha1 Durable cluster without a size: v1beta1 size %v, want 1Gi", hub.Spec.Storage.Size)
	}
}

func TestExistingSecretIsPasswordSecretRef(t *testing.T) {
	hub := toHub(t, &ValkeyCluster{Spec: ValkeyClusterSpec{Auth: AuthSpec{ExistingSecret: &SecretKeyReference{Name: "app-pw", Key: "pw"}}}})
	if got := hub.Spec.Auth.PasswordSecretRef; got == nil || *got != (v1beta1.SecretKeyRef{Name: "app-pw", Key: "pw"}) {
		t.Errorf("passwordSecretRef %+v", got)
	}
	spoke := fromHub(t, &v1beta1.ValkeyCluster{Spec: v1beta1.ValkeyClusterSpec{Auth: v1beta1.AuthSpec{PasswordSecretRef: &v1beta1.SecretKeyRef{Name: "x", Key: "k"}}}})
	if got := spoke.Spec.Auth.ExistingSecret; got == nil || *got != (SecretKeyReference{Name: "x", Key: "k"}) {
		t.Errorf("existingSecret %+v", got)
	}
}

func TestTLSNames(t *testing.T) {
	for alpha, beta := range map[TLSMode]v1beta1.TLSMode{TLSBoth: v1beta1.TLSPlainAndTLS, TLSOnly: v1beta1.TLSOnly, TLSDisabled: v1beta1.TLSDisabled} {
		if got := toHub(t, &ValkeyCluster{Spec: ValkeyClusterSpec{TLS: TLSSpec{Mode: alpha}}}).Spec.TLS.Mode; got != beta {
			t.Errorf("v1alpha1 tls.mode %s is v1beta1 %s, want %s", alpha, got, beta)
		}
		if got := fromHub(t, &v1beta1.ValkeyCluster{Spec: v1beta1.ValkeyClusterSpec{TLS: v1beta1.TLSSpec{Mode: beta}}}).Spec.TLS.Mode; got != alpha {
			t.Errorf("v1beta1 tls.mode %s is v1alpha1 %s, want %s", beta, got, alpha)
		}
	}
	day := &metav1.Duration{Duration: 24 * time.Hour}
	hub := toHub(t, &ValkeyCluster{Spec: ValkeyClusterSpec{TLS: TLSSpec{Issuer: &TLSIssuer{Name: "ca", Kind: "ClusterIssuer", Group: "cert-manager.io", Duration: day}}}})
	if ref := hub.Spec.TLS.IssuerRef; ref == nil || *ref != (v1beta1.IssuerRef{Name: "ca", Kind: "ClusterIssuer", Group: "cert-manager.io"}) || hub.Spec.TLS.Duration == nil || *hub.Spec.TLS.Duration != *day {
		t.Errorf("issuer: issuerRef %+v, duration %v", ref, hub.Spec.TLS.Duration)
	}
	hub = toHub(t, &ValkeyCluster{Spec: ValkeyClusterSpec{TLS: TLSSpec{SecretName: "certs"}}})
	if ref := hub.Spec.TLS.SecretRef; ref == nil || ref.Name != "certs" {
		t.Errorf("secretName certs: secretRef %+v", ref)
	}
}

func TestNodeRolesArePascalCase(t *testing.T) {
	in := &ValkeyCluster{Status: ValkeyClusterStatus{Nodes: []NodeStatus{{Pod: "a", Role: NodeRolePrimary}, {Pod: "b", Role: NodeRoleReplica}, {Pod: "c", Role: NodeRoleUnknown}}}}
	var got []string
	for _, n := range toHub(t, in).Status.Nodes {
		got = append(got, string(n.Role))
	}
	if strings.Join(got, ",") != "Primary,Replica,Unknown" {
		t.Errorf("v1beta1 roles %v", got)
	}
	back := fromHub(t, &v1beta1.ValkeyCluster{Status: v1beta1.ValkeyClusterStatus{Nodes: []v1beta1.NodeStatus{{Pod: "a", Role: v1beta1.NodeRolePrimary}}}})
	if back.Status.Nodes[0].Role != "primary" {
		t.Errorf("v1alpha1 role %s, want primary", back.Status.Nodes[0].Role)
	}
}

func TestStatusPodsAreV1alpha1StatusReplicas(t *testing.T) {
	hub := toHub(t, &ValkeyCluster{Status: ValkeyClusterStatus{Replicas: 6, ReadyReplicas: 5}})
	if hub.Status.Pods != 6 || hub.Status.ReadyPods != 5 || hub.Status.Replicas != 0 {
		t.Errorf("v1beta1 status pods %d, readyPods %d, replicas %d; want 6, 5 and 0 (per primary: not known to v1alpha1)", hub.Status.Pods, hub.Status.ReadyPods, hub.Status.Replicas)
	}
}

func TestTheAnnotationCarriesOnlyWhatV1alpha1Lacks(t *testing.T) {
	plain := &v1beta1.ValkeyCluster{Spec: v1beta1.ValkeyClusterSpec{Replicas: ptr.To[int32](1), Storage: v1beta1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))}}}
	if a, ok := fromHub(t, plain).Annotations[AnnotationV1beta1Fields]; ok {
		t.Errorf("nothing to keep, yet %s=%s", AnnotationV1beta1Fields, a)
	}
	knobs := plain.DeepCopy()
	knobs.Spec.PodLabels = map[string]string{"team": "cache"}
	knobs.Spec.PriorityClassName = "high"
	knobs.Spec.RestoreFrom = &v1beta1.RestoreSource{Backup: "nightly", DiscardCurrentData: true}
	spoke := fromHub(t, knobs)
	a := spoke.Annotations[AnnotationV1beta1Fields]
	for _, want := range []string{`"podLabels":{"team":"cache"}`, `"priorityClassName":"high"`, `"discardCurrentData":true`} {
		if !strings.Contains(a, want) {
			t.Errorf("%s=%s lacks %s", AnnotationV1beta1Fields, a, want)
		}
	}
	back := toHub(t, spoke)
	if _, ok := back.Annotations[AnnotationV1beta1Fields]; ok || back.Spec.PodLabels["team"] != "cache" || back.Spec.PriorityClassName != "high" || !back.Spec.RestoreFrom.DiscardCurrentData {
		t.Errorf("back in v1beta1: annotations %v, podLabels %v, priorityClassName %q, restoreFrom %+v", back.Annotations, back.Spec.PodLabels, back.Spec.PriorityClassName, back.Spec.RestoreFrom)
	}
	// A v1alpha1 client that removed restoreFrom removed its intent with it.
	spoke.Spec.RestoreFrom = nil
	if back := toHub(t, spoke); back.Spec.RestoreFrom != nil {
		t.Errorf("restoreFrom removed in v1alpha1 came back as %+v", back.Spec.RestoreFrom)
	}
}

func TestStoreCredentials(t *testing.T) {
	hub := toHub(t, &ValkeyCluster{Spec: ValkeyClusterSpec{Backup: &BackupSpec{Store: BackupStore{Bucket: "b", CredentialsSecret: "s3"}}}})
	if ref := hub.Spec.Backup.Store.CredentialsSecretRef; ref == nil || ref.Name != "s3" {
		t.Errorf("credentialsSecret s3: credentialsSecretRef %+v", ref)
	}
	spoke := fromHub(t, &v1beta1.ValkeyCluster{Spec: v1beta1.ValkeyClusterSpec{Backup: &v1beta1.BackupSpec{Store: v1beta1.BackupStore{Bucket: "b"}}}})
	if spoke.Spec.Backup.Store.CredentialsSecret != "" {
		t.Errorf("the default credential chain reads as credentialsSecret %q", spoke.Spec.Backup.Store.CredentialsSecret)
	}
}

func TestBackupConversion(t *testing.T) {
	hub := &v1beta1.ValkeyBackup{}
	in := &ValkeyBackup{Status: ValkeyBackupStatus{Mode: "cluster", Size: 3 << 29, Store: &BackupStore{Bucket: "b", CredentialsSecret: "s3"}}}
	if err := in.ConvertTo(hub); err != nil {
		t.Fatal(err)
	}
	if hub.Status.Mode != v1beta1.BackupModeCluster || hub.Status.SizeHuman != "1.5 GiB" || hub.Status.Store.CredentialsSecretRef.Name != "s3" {
		t.Errorf("v1beta1 status: mode %q, sizeHuman %q, store %+v", hub.Status.Mode, hub.Status.SizeHuman, hub.Status.Store)
	}
	hub.Status.Conditions = []metav1.Condition{{Type: v1beta1.ConditionBackupReady, Status: metav1.ConditionTrue, Reason: "Completed", LastTransitionTime: metav1.Unix(1, 0)}}
	spoke := &ValkeyBackup{}
	if err := spoke.ConvertFrom(hub); err != nil {
		t.Fatal(err)
	}
	if spoke.Status.Mode != "cluster" || !strings.Contains(spoke.Annotations[AnnotationV1beta1Fields], `"type":"Ready"`) {
		t.Errorf("v1alpha1: mode %q, annotations %v", spoke.Status.Mode, spoke.Annotations)
	}
}

func TestACLPasswordSecretRefs(t *testing.T) {
	hub := &v1beta1.ValkeyACL{}
	in := &ValkeyACL{Spec: ValkeyACLSpec{PasswordSecrets: []SecretKeyRef{{Name: "old", Key: "pw"}, {Name: "new"}}}}
	if err := in.ConvertTo(hub); err != nil {
		t.Fatal(err)
	}
	if want := []v1beta1.SecretKeyRef{{Name: "old", Key: "pw"}, {Name: "new"}}; len(hub.Spec.PasswordSecretRefs) != 2 || hub.Spec.PasswordSecretRefs[0] != want[0] || hub.Spec.PasswordSecretRefs[1] != want[1] {
		t.Errorf("passwordSecretRefs %+v, want %+v", hub.Spec.PasswordSecretRefs, want)
	}
}

// TestASentinelTopologyReadsAsReplicationAndComesBack: v1alpha1's enum has no Sentinel; its
// clients see the data nodes' shape and write back what they read without losing the
// sentinels.
func TestASentinelTopologyReadsAsReplicationAndComesBack(t *testing.T) {
	hub := &v1beta1.ValkeyCluster{Spec: v1beta1.ValkeyClusterSpec{Topology: v1beta1.TopologySentinel,
		Sentinel: &v1beta1.SentinelSpec{Replicas: 5, Quorum: ptr.To(int32(2))}}}
	spoke := fromHub(t, hub)
	if spoke.Spec.Topology != TopologyReplication {
		t.Errorf("v1alpha1 topology %q, want Replication", spoke.Spec.Topology)
	}
	back := toHub(t, spoke)
	if back.Spec.Topology != v1beta1.TopologySentinel || back.Spec.Sentinel == nil || back.Spec.Sentinel.Replicas != 5 || *back.Spec.Sentinel.Quorum != 2 {
		t.Errorf("back in v1beta1: topology %q, sentinel %+v; want Sentinel with 5 sentinels, quorum 2", back.Spec.Topology, back.Spec.Sentinel)
	}
	plain := toHub(t, fromHub(t, &v1beta1.ValkeyCluster{Spec: v1beta1.ValkeyClusterSpec{Topology: v1beta1.TopologyReplication}}))
	if plain.Spec.Topology != v1beta1.TopologyReplication || plain.Spec.Sentinel != nil {
		t.Errorf("a Replication topology came back as %q with sentinel %+v", plain.Spec.Topology, plain.Spec.Sentinel)
	}
}
