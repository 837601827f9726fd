package v1alpha1

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// fullCluster returns a ValkeyCluster with every field of this package's types set (checked
// by TestFullClusterSetsEveryField), so that the deepcopy and JSON tests cover all of them.
func fullCluster() *ValkeyCluster {
	size := resource.MustParse("2Gi")
	class := "fast"
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	micro := metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC))
	return &ValkeyCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: "ValkeyCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: "vk", Namespace: "ns", Labels: map[string]string{"a": "b"}},
		Spec: ValkeyClusterSpec{
			Topology: TopologyReplication,
			Profile:  ProfileCache,
			Image:    "valkey/valkey:8.1",
			Replicas: 5,
			Shards:   4,
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			},
			Storage: StorageSpec{Size: &size, StorageClassName: &class},
			Auth: AuthSpec{
				Enabled:             ptrTo(true),
				ExistingSecret:      &SecretKeyReference{Name: "pw", Key: "secret"},
				RotationGracePeriod: &metav1.Duration{Duration: time.Minute},
			},
			TLS: TLSSpec{Mode: TLSBoth, SecretName: "vk-tls", ClientCertificates: true,
				Issuer: &TLSIssuer{Name: "ca", Kind: "Issuer", Group: "cert-manager.io", Duration: &metav1.Duration{Duration: time.Hour}, RenewBefore: &metav1.Duration{Duration: time.Minute}}},
			Hibernate: true,
			NetworkPolicy: NetworkPolicySpec{Enabled: true,
				From:     []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "app"}}}},
				Operator: &networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": "ops"}}}},
			Config:       map[string]ConfigValue{"maxmemory-samples": "10"},
			NodeSelector: map[string]string{"disk": "ssd"},
			Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "valkey"}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}},
				}}},
			}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: v1beta1.HostnameTopologyKey, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "vk"}},
			}},
			PodDisruptionBudget: PodDisruptionBudgetSpec{Enabled: ptrTo(false)},
			Failover:            FailoverSpec{ProbeIntervalSeconds: 2, FailureThreshold: 4},
			Durability:          DurabilitySpec{MinReplicasToWrite: ptrTo(int32(1)), MaxLagSeconds: 3},
			Backup: &BackupSpec{
				Store:     fullStore(),
				Schedule:  "0 3 * * *",
				Suspend:   true,
				Retention: BackupRetention{Count: ptrTo(int32(3)), MaxAge: &metav1.Duration{Duration: time.Hour}},
			},
			RestoreFrom: &RestoreSource{Backup: "nightly", Store: ptrTo(fullStore()), Path: "ns/vk/nightly"},
		},
		Status: ValkeyClusterStatus{
			State:              StateFailingOver,
			ObservedGeneration: 7,
			Conditions: []metav1.Condition{{
				Type: v1beta1.ConditionFailingOver, Status: metav1.ConditionTrue, Reason: "PrimaryLost",
				Message: "vk-0 stopped answering", LastTransitionTime: at, ObservedGeneration: 7,
			}},
			History: []HistoryEntry{{
				Seq: 4, Time: at, From: StateSteady, To: StateFailingOver,
				Event: "primary-lost", Reason: "PrimaryLost", Message: "vk-0 stopped answering",
			}},
			Nodes: []NodeStatus{{
				Pod: "vk-1", IP: "127.0.0.2", Role: NodeRoleReplica, Shard: 1, ReplicationOffset: 1000, Lag: 10, Ready: true,
			}},
			Primary:       "vk-1",
			ReadyNodes:    "2/3",
			Slots:         "12288/16384, 4096 unserved",
			ShardCount:    4,
			Shards:        []ShardStatus{{Index: 1, Primary: "vk-s1-0", Slots: "4096-8191"}},
			Replicas:      3,
			ReadyReplicas: 2,
			Progress:      "rolling: 1 of 3 pods restarted at revision r",
			Waiting:       "vk-0 unreachable for 1 of 3 probes",
			Machine: &MachineStatus{
				Seq:          4,
				PodsPerShard: 3,
				Since:        &micro, Clock: "operator-0/1",
				Shards: []ShardRecord{{
					Primary: "vk-1", RunID: "run-1", Epoch: 2, ClaimEpoch: 5, ClaimNode: "node-1",
					History: ReplicationHistory{ID: "id-2", PrevID: "id-1", PrevEnd: 900, PrevRestarted: true, Older: []HistoryLink{{ID: "id-0", End: 10, Restarted: true}}},
					Deposed: []DeposedPod{{Pod: "vk-0", Keys: 7, Left: &HistoryLink{ID: "id-1", End: 900, Restarted: true}, Resyncing: true, ResyncKeys: 3}},
				}},
				Operation: &OperationRecord{
					Shard: 1, Lost: "vk-0", LostRunID: "run-0", Planned: true, Candidate: "vk-1",
					Writer: "vk-0", WriterRunID: "run-0", HandOver: "vk-2", TargetPods: 2,
					LostHistory: ReplicationHistory{ID: "id-1", PrevID: "id-0", PrevEnd: 10, PrevRestarted: true, Older: []HistoryLink{{ID: "id-a", End: 5, Restarted: true}}},
					Unpromoted:  true, ElectedAt: &micro, ElectedClock: "operator-0/1", FenceFrom: &micro, KnownFenced: true, Reseed: true, Preempted: StateRolling, Wake: true, WakeFrom: "vk-0 -", Leaving: true, Rollout: true,
					Target: "rev-2", TargetShards: 3, Snapshot: "snap-1", GiveBack: true, TakenOver: true,
				},
				Restored:    "restore-1",
				Rotation:    &RotationRecord{ID: "all@1", Users: "default,operator", Phase: "Published", PublishedAt: &micro, PublishedClock: "operator-0/1"},
				Rotated:     "all@0",
				Certificate: "A1",
			},
			FailingActions: []FailingAction{{Action: "replica-of vk-0 -> vk-1 (10.0.0.2)", Count: 2, LastError: "i/o timeout", RetryAt: at}},
			Restore:        &RestoreStatus{ID: "ns/vk/nightly", Location: "s3://b/ns/vk/nightly/", Phase: "Restoring", Reason: "r", HistoriesOf: "ns/vk/nightly", Histories: []string{"h2"}, Store: ptrTo(fullStore()), Path: "ns/vk/nightly"},
			TLS: &TLSStatus{
				Secret:      &CertificateInfo{Subject: "CN=vk", Issuer: "CN=ca", Serial: "A1", DNSNames: []string{"*.vk-nodes.ns.svc"}, NotAfter: &at},
				Refused:     "expired",
				Certificate: &CertificateRequestStatus{Name: "vk-tls", Ready: "False", Message: "m"},
				Nodes: []NodeCertificate{{Pod: "vk-0", CertificateInfo: CertificateInfo{Subject: "CN=vk", Issuer: "CN=ca", Serial: "A0", DNSNames: []string{"vk-0"}, NotAfter: &at},
					MatchesSecret: true, Error: "e"}},
			},
		},
	}
}

func fullStore() BackupStore {
	return BackupStore{
		Bucket: "backups", Prefix: "prod/", Endpoint: "https://s3.example.com", Region: "eu-west-1", ForcePathStyle: true,
		CredentialsSecret: "s3", Encryption: "aws:kms", KMSKeyID: "k1", Checksums: "WhenRequired", AllowPlainHTTP: true,
	}
}

// TestFullClusterSetsEveryField fails when a field is added to this package's types without
// being set in fullCluster, so the tests below keep covering every field.
func TestFullClusterSetsEveryField(t *testing.T) {
	everyFieldSet(t, "ValkeyCluster", fullCluster())
}

// everyFieldSet fails t for each field of this package's types that v leaves at its zero value.
func everyFieldSet(t *testing.T, root string, v any) {
	t.Helper()
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		if v.IsZero() {
			t.Errorf("%s is left unset", path)
			return
		}
		switch v.Kind() {
		case reflect.Pointer:
			// A set pointer is enough: *false is a value (auth.enabled: false).
			if v.Elem().Kind() == reflect.Struct {
				walk(path, v.Elem())
			}
		case reflect.Struct:
			if v.Type().PkgPath() != reflect.TypeFor[ValkeyCluster]().PkgPath() {
				return // Kubernetes' own types: set enough of them to be non-zero
			}
			for i := range v.NumField() {
				f := v.Type().Field(i)
				walk(path+"."+f.Name, v.Field(i))
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(path+"[]", v.Index(i))
			}
		}
	}
	walk(root, reflect.ValueOf(v))
}

func TestDeepCopyIsEqualAndIndependent(t *testing.T) {
	orig := fullCluster()
	before, err := json.Marshal(orig)
	if err != nil {
		t.Fatal(err)
	}
	cp := orig.DeepCopy()
	if !equality.Semantic.DeepEqual(orig, cp) {
		t.Fatalf("DeepCopy differs from the original:\n%+v\n%+v", orig, cp)
	}
	// Change everything the copy holds by reference; the original must not move.
	cp.Spec.Storage.Size.Add(resource.MustParse("1Gi"))
	*cp.Spec.Storage.StorageClassName = "slow"
	*cp.Spec.Auth.Enabled = false
	cp.Spec.Auth.ExistingSecret.Name = "other"
	cp.Spec.Config["maxmemory-samples"] = "5"
	cp.Spec.NodeSelector["disk"] = "hdd"
	cp.Spec.Tolerations[0].Value = "x"
	cp.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values[0] = "b"
	cp.Spec.TopologySpreadConstraints[0].LabelSelector.MatchLabels["app"] = "x"
	*cp.Spec.PodDisruptionBudget.Enabled = true
	cp.Spec.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("2Gi")
	cp.Status.Conditions[0].Reason = "Other"
	cp.Status.History[0].Seq = 99
	cp.Status.Nodes[0].Lag = 99
	cp.Status.Machine.Since.Time = cp.Status.Machine.Since.Add(time.Hour)
	cp.Status.Machine.Shards[0].Epoch = 99
	cp.Status.Machine.Operation.Candidate = "vk-2"
	cp.Status.Machine.Operation.ElectedAt.Time = cp.Status.Machine.Operation.ElectedAt.Add(time.Hour)
	cp.Labels["a"] = "c"
	after, err := json.Marshal(orig)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Errorf("changing the copy changed the original:\nbefore %s\nafter  %s", before, after)
	}
}

func TestDeepCopyObject(t *testing.T) {
	orig := fullCluster()
	obj := orig.DeepCopyObject()
	cp, ok := obj.(*ValkeyCluster)
	if !ok || cp == orig || !equality.Semantic.DeepEqual(cp, orig) {
		t.Fatalf("DeepCopyObject returned %T, equal %v", obj, ok && equality.Semantic.DeepEqual(cp, orig))
	}
	list := &ValkeyClusterList{Items: []ValkeyCluster{*orig}}
	lcp, ok := list.DeepCopyObject().(*ValkeyClusterList)
	if !ok || !equality.Semantic.DeepEqual(lcp, list) {
		t.Fatal("ValkeyClusterList.DeepCopyObject is not an equal *ValkeyClusterList")
	}
	lcp.Items[0].Spec.Config["maxmemory-samples"] = "1"
	if list.Items[0].Spec.Config["maxmemory-samples"] != "10" {
		t.Error("changing the list copy changed the original")
	}
	var nilCluster *ValkeyCluster
	if nilCluster.DeepCopy() != nil {
		t.Error("DeepCopy of nil is not nil")
	}
}

// TestJSONRoundTrip checks that every field survives encoding and decoding (a field without
// a json tag, or with a clashing one, would not) and that the wire names are the documented
// camelCase ones.
func TestJSONRoundTrip(t *testing.T) {
	orig := fullCluster()
	data, err := json.Marshal(orig)
	if err != nil {
		t.Fatal(err)
	}
	var back ValkeyCluster
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(orig, &back) {
		t.Errorf("JSON round trip differs:\n%+v\n%+v", orig, &back)
	}
	for _, name := range []string{
		`"topology"`, `"profile"`, `"image"`, `"replicas"`, `"resources"`, `"storage"`, `"size"`,
		`"storageClassName"`, `"auth"`, `"enabled"`, `"existingSecret"`, `"key"`, `"config"`,
		`"nodeSelector"`, `"tolerations"`, `"affinity"`, `"topologySpreadConstraints"`,
		`"podDisruptionBudget"`, `"state"`, `"observedGeneration"`, `"conditions"`, `"history"`,
		`"seq"`, `"time"`, `"from"`, `"to"`, `"event"`, `"reason"`, `"message"`, `"nodes"`,
		`"pod"`, `"ip"`, `"role"`, `"replicationOffset"`, `"lag"`, `"ready"`, `"primary"`,
		`"readyNodes"`, `"readyReplicas"`, `"machine"`, `"since"`, `"shards"`, `"runID"`,
		`"epoch"`, `"prevID"`, `"prevEnd"`, `"operation"`, `"lostHistory"`, `"electedAt"`,
		`"knownFenced"`, `"reseed"`, `"preempted"`, `"targetShards"`, `"snapshot"`, `"restored"`,
	} {
		if !strings.Contains(string(data), name+":") {
			t.Errorf("JSON has no field %s", name)
		}
	}
}

// TestEmptySpecMarshalsNoValues checks that a Go client sending a zero spec leaves every
// defaulted field out of the JSON, so the API server applies its defaults instead of taking a
// Go zero value: false for auth.enabled would silently turn authentication off.
func TestEmptySpecMarshalsNoValues(t *testing.T) {
	data, err := json.Marshal(ValkeyClusterSpec{})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"resources":{},"storage":{},"auth":{},"tls":{},"networkPolicy":{},"podDisruptionBudget":{},"failover":{},"durability":{}}`
	if string(data) != want {
		t.Errorf("empty spec marshals to %s, want %s", data, want)
	}
}

// TestValkeyBackupRoundTrip checks that every field of a ValkeyBackup is set below, survives
// JSON and is copied by DeepCopy without sharing.
func TestValkeyBackupRoundTrip(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	store := fullStore()
	orig := &ValkeyBackup{
		TypeMeta:   metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: "ValkeyBackup"},
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns"},
		Spec:       ValkeyBackupSpec{Cluster: "vk"},
		Status: ValkeyBackupStatus{
			Phase: BackupFailed, Reason: "S3 refused", Attempts: 2, NextAttemptAt: &at, StartedAt: &at, CompletedAt: &at,
			Location: "s3://backups/prod/ns/vk/nightly/", Store: &store, Path: "ns/vk/nightly", Mode: "cluster",
			ValkeyVersion: "9.1.2", Size: 10, Runner: "op-0/1",
			Shards: []BackupShard{{Index: 1, Node: "vk-s1-1", Slots: "0-5460", File: "shard-1.rdb", Size: 10, SHA256: "ab", RDBVersion: "0011"}},
		},
	}
	everyFieldSet(t, "ValkeyBackup", orig)
	data, err := json.Marshal(orig)
	if err != nil {
		t.Fatal(err)
	}
	var back ValkeyBackup
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(orig, &back) {
		t.Errorf("JSON round trip differs:\n%+v\n%+v", orig, &back)
	}
	cp := orig.DeepCopyObject().(*ValkeyBackup)
	cp.Status.Shards[0].Size = 99
	cp.Status.Store.Bucket = "other"
	if orig.Status.Shards[0].Size != 10 || orig.Status.Store.Bucket != "backups" {
		t.Error("changing the copy changed the original")
	}
}
