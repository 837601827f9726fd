package kube

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// updateGolden rewrites testdata/upgrade/*.json. Only ever with the code of the previous
// release: the files are what that release rendered, and the test's point is that this one
// renders the same.
var updateGolden = flag.Bool("update-upgrade-golden", false, "rewrite testdata/upgrade from the code under test")

// upgradeCase is a ValkeyCluster as a release that served only v1alpha1 stored it: the API
// server had applied v1alpha1's CRD defaults (v1alpha1.SetDefaults repeats them).
type upgradeCase struct {
	name string
	vc   *v1alpha1.ValkeyCluster
}

func upgradeCases() []upgradeCase {
	cluster := func(name string, spec v1alpha1.ValkeyClusterSpec) *v1alpha1.ValkeyCluster {
		vc := &v1alpha1.ValkeyCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "prod", UID: "0b3e4c1a-8d1f-4c55-9a44-2a7e5b1f6c10", Generation: 4},
			Spec:       spec,
		}
		v1alpha1.SetDefaults(&vc.Spec)
		return vc
	}
	size := func(s string) *resource.Quantity { q := resource.MustParse(s); return &q }
	limits := corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi"), corev1.ResourceCPU: resource.MustParse("1")},
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
	store := v1alpha1.BackupStore{Bucket: "backups", Prefix: "prod", Endpoint: "https://s3.example.com", CredentialsSecret: "s3-creds"}
	restarted := cluster("restarted", v1alpha1.ValkeyClusterSpec{})
	restarted.Annotations = map[string]string{v1beta1.AnnotationRestartRequested: "2026-11-01T10:00:00Z"}
	return []upgradeCase{
		{"replication-defaults", cluster("cache-a", v1alpha1.ValkeyClusterSpec{})},
		{"replication-one-pod", cluster("single", v1alpha1.ValkeyClusterSpec{Replicas: 1})},
		{"replication-cache-limits", cluster("lru", v1alpha1.ValkeyClusterSpec{
			Profile: v1alpha1.ProfileCache, Replicas: 2, Resources: limits, Image: "valkey/valkey:8.0.2",
			Config: map[string]v1alpha1.ConfigValue{"slowlog-max-len": "256", "databases": "32"},
		})},
		{"replication-tuned", cluster("tuned", v1alpha1.ValkeyClusterSpec{
			Replicas: 5, Storage: v1alpha1.StorageSpec{Size: size("20Gi"), StorageClassName: ptr.To("fast")},
			Auth:          v1alpha1.AuthSpec{ExistingSecret: &v1alpha1.SecretKeyReference{Name: "app-pw", Key: "pw"}},
			Durability:    v1alpha1.DurabilitySpec{MinReplicasToWrite: ptr.To(int32(2)), MaxLagSeconds: 5},
			Failover:      v1alpha1.FailoverSpec{ProbeIntervalSeconds: 2, FailureThreshold: 5},
			NetworkPolicy: v1alpha1.NetworkPolicySpec{Enabled: true},
			NodeSelector:  map[string]string{"pool": "data"},
			Tolerations:   []corev1.Toleration{{Key: "data", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Config:        map[string]v1alpha1.ConfigValue{"maxmemory": "100mb", "appendfsync": "always"},
		})},
		{"replication-no-pdb-no-auth", cluster("open", v1alpha1.ValkeyClusterSpec{
			Auth:                v1alpha1.AuthSpec{Enabled: ptr.To(false)},
			PodDisruptionBudget: v1alpha1.PodDisruptionBudgetSpec{Enabled: ptr.To(false)},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"data"}}}}},
			}}},
		})},
		{"replication-restart-requested", restarted},
		{"standalone", cluster("solo", v1alpha1.ValkeyClusterSpec{Topology: v1alpha1.TopologyStandalone})},
		{"standalone-cache", cluster("solo-cache", v1alpha1.ValkeyClusterSpec{Topology: v1alpha1.TopologyStandalone, Profile: v1alpha1.ProfileCache, Replicas: 1})},
		{"cluster-defaults", cluster("shop", v1alpha1.ValkeyClusterSpec{Topology: v1alpha1.TopologyCluster})},
		{"cluster-sized", cluster("big", v1alpha1.ValkeyClusterSpec{Topology: v1alpha1.TopologyCluster, Shards: 5, Replicas: 2, Resources: limits})},
		{"tls-both-secret", cluster("tls-both", v1alpha1.ValkeyClusterSpec{TLS: v1alpha1.TLSSpec{Mode: v1alpha1.TLSBoth, SecretName: "own-cert"}})},
		{"tls-only-issuer", cluster("tls-only", v1alpha1.ValkeyClusterSpec{TLS: v1alpha1.TLSSpec{
			Mode: v1alpha1.TLSOnly, ClientCertificates: true,
			Issuer: &v1alpha1.TLSIssuer{Name: "ca", Kind: "ClusterIssuer", Duration: &metav1.Duration{Duration: 2160 * 60 * 60 * 1e9}},
		}})},
		{"cluster-tls-issuer", cluster("shop-tls", v1alpha1.ValkeyClusterSpec{Topology: v1alpha1.TopologyCluster, TLS: v1alpha1.TLSSpec{
			Mode: v1alpha1.TLSBoth, Issuer: &v1alpha1.TLSIssuer{Name: "ca"},
		}})},
		{"backup", cluster("backed", v1alpha1.ValkeyClusterSpec{Backup: &v1alpha1.BackupSpec{Schedule: "0 3 * * *", Store: store}})},
		{"cluster-backup-restore", cluster("restored", v1alpha1.ValkeyClusterSpec{
			Topology: v1alpha1.TopologyCluster, Backup: &v1alpha1.BackupSpec{Schedule: "@daily", Store: store},
			RestoreFrom: &v1alpha1.RestoreSource{Backup: "backed-20261101"},
		})},
	}
}

// renderedObjects is every object the operator renders for a cluster: Build's, and the
// StatefulSets of the EnsureObjects the machine decides at the spec's counts.
type renderedObjects struct {
	Desired Desired
	Ensured []json.RawMessage
}

// TestExistingClustersRenderTheSameObjects guards an upgrade: the objects the operator renders
// for a cluster created through v1alpha1 (read now as v1beta1, through the conversion) are
// byte for byte those the previous release rendered (testdata/upgrade). Any difference in a
// pod template is a new revision, and every existing cluster would roll all of its pods.
func TestExistingClustersRenderTheSameObjects(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "valkey.fsm.dev/v1alpha1", Kind: "ValkeyCluster", Name: "owner", UID: "0b3e4c1a-8d1f-4c55-9a44-2a7e5b1f6c10", Controller: ptr.To(true)}
	for _, c := range upgradeCases() {
		t.Run(c.name, func(t *testing.T) {
			got := renderForUpgrade(t, c.vc, owner)
			file := filepath.Join("testdata", "upgrade", c.name+".json")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("the objects rendered for an existing v1alpha1 cluster changed: its pods would roll on upgrade\n%s", lineDiff(string(want), string(got)))
			}
		})
	}
}

func renderForUpgrade(t *testing.T, vc *v1alpha1.ValkeyCluster, owner metav1.OwnerReference) []byte {
	t.Helper()
	// As the operator reads it now: converted to v1beta1 by the conversion webhook, then
	// defaulted once per turn.
	hub := &v1beta1.ValkeyCluster{}
	if err := vc.DeepCopy().ConvertTo(hub); err != nil {
		t.Fatal(err)
	}
	v1beta1.SetDefaults(&hub.Spec)
	d := Build(hub, owner)
	shards := 1
	if d.Names.Sharded {
		shards = int(hub.Spec.Shards)
	}
	ensured, err := ForAction(d, machine.EnsureObjects{Shards: shards, Replicas: int(*d.StatefulSet.Spec.Replicas) - 1, Revision: d.Revision})
	if err != nil {
		t.Fatal(err)
	}
	out := renderedObjects{Desired: d}
	for _, sts := range ensured.StatefulSets {
		b, err := json.Marshal(sts)
		if err != nil {
			t.Fatal(err)
		}
		out.Ensured = append(out.Ensured, b)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// lineDiff shows the first lines where want and got differ, with some context.
func lineDiff(want, got string) string {
	w, g := bytes.Split([]byte(want), []byte("\n")), bytes.Split([]byte(got), []byte("\n"))
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl []byte
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if !bytes.Equal(wl, gl) {
			return "line " + itoa(i+1) + ":\n- " + string(wl) + "\n+ " + string(gl)
		}
	}
	return "(equal lines, different bytes)"
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
