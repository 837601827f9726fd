package celtest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestDiscovery checks what kubectl finds out about the kind: its short name, category,
// scope and status subresource.
func TestDiscovery(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(config(t))
	if err != nil {
		t.Fatal(err)
	}
	list, err := dc.ServerResourcesForGroupVersion(v1alpha1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	var found, status bool
	for _, r := range list.APIResources {
		switch r.Name {
		case "valkeyclusters":
			found = true
			if r.Kind != "ValkeyCluster" || !r.Namespaced || !slices.Equal(r.ShortNames, []string{"vkc"}) || !slices.Equal(r.Categories, []string{"valkey"}) {
				t.Errorf("valkeyclusters: kind %s, namespaced %v, short names %v, categories %v; want ValkeyCluster, true, [vkc], [valkey]",
					r.Kind, r.Namespaced, r.ShortNames, r.Categories)
			}
		case "valkeyclusters/status":
			status = true
		}
	}
	if !found || !status {
		t.Errorf("discovery lists valkeyclusters %v and valkeyclusters/status %v; want both", found, status)
	}
}

// TestPrintColumns asks the API server for the table kubectl get prints.
func TestPrintColumns(t *testing.T) {
	vkc := clusters(t)
	ctx := context.Background()
	created, err := vkc.Create(ctx, object(t, "vk", "{}"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vkc.UpdateStatus(ctx, withStatus(t, created, steadyStatus()), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	hc, err := rest.HTTPClientFor(config(t))
	if err != nil {
		t.Fatal(err)
	}
	url := strings.TrimSuffix(config(t).Host, "/") + "/apis/valkey.fsm.dev/v1alpha1/namespaces/" + created.GetNamespace() + "/valkeyclusters"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v\n%s", url, resp.Status, err, body)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if want := []string{"Name", "State", "Topology", "Shards", "Slots", "Ready", "Primary", "Age"}; !slices.Equal(names, want) {
		t.Errorf("columns %v, want %v", names, want)
	}
	if len(table.Rows) != 1 || len(table.Rows[0].Cells) != 8 {
		t.Fatalf("rows %+v, want one of 8 cells", table.Rows)
	}
	cells := table.Rows[0].Cells[:7]
	// A replication cluster has no shards or slots: those cells are empty (nil).
	if want := []any{"vk", "Steady", "Replication", nil, nil, "2/3", "vk-1"}; !equality.Semantic.DeepEqual(cells, want) {
		t.Errorf("row %v, want %v then the age", cells, want)
	}
}

// TestTypedRoundTrip creates a ValkeyCluster with every spec field set from Go and checks it
// comes back unchanged apart from defaults: a field the CRD schema lacks (a json tag that
// does not match, a type the generator skipped) would be pruned silently by the API server.
func TestTypedRoundTrip(t *testing.T) {
	vkc := clusters(t)
	size := resource.MustParse("5Gi")
	c := &v1alpha1.ValkeyCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "ValkeyCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: "vk"},
		Spec: v1alpha1.ValkeyClusterSpec{
			Topology: v1alpha1.TopologyReplication,
			Profile:  v1alpha1.ProfileCache,
			Image:    "valkey/valkey:8.1",
			Replicas: 5,
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			},
			Storage: v1alpha1.StorageSpec{Size: &size, StorageClassName: ptr("fast")},
			Auth: v1alpha1.AuthSpec{
				Enabled:             ptr(true),
				ExistingSecret:      &v1alpha1.SecretKeyReference{Name: "pw", Key: "secret"},
				RotationGracePeriod: &metav1.Duration{Duration: 90 * time.Second},
			},
			TLS:          v1alpha1.TLSSpec{Mode: v1alpha1.TLSDisabled},
			Config:       map[string]v1alpha1.ConfigValue{"maxmemory-samples": "10", "client-output-buffer-limit": "pubsub 64mb 16mb 60"},
			NodeSelector: map[string]string{"disk": "ssd"},
			Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "valkey", Effect: corev1.TaintEffectNoSchedule}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"db"}}},
				}}},
			}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "vk"}},
			}},
			PodDisruptionBudget: v1alpha1.PodDisruptionBudgetSpec{Enabled: ptr(false)},
			Failover:            v1alpha1.FailoverSpec{ProbeIntervalSeconds: 2, FailureThreshold: 4},
			Durability:          v1alpha1.DurabilitySpec{MinReplicasToWrite: ptr(int32(2)), MaxLagSeconds: 5},
		},
	}
	created, err := vkc.Create(context.Background(), unstructuredOf(t, c), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := typed(t, created).Spec; !equality.Semantic.DeepEqual(got, c.Spec) {
		t.Errorf("spec came back as\n%+v\nwant\n%+v", got, c.Spec)
	}
}
