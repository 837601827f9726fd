package operatorsuite

import (
	"testing"
	"time"
)

// TestSamplesReachSteady applies the sample manifests users start from (make demo applies
// replication.yaml) and waits for each to converge.
func TestSamplesReachSteady(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	for file, want := range map[string]struct {
		name string
		pods int
	}{
		"replication.yaml":      {"demo", 3},
		"standalone-cache.yaml": {"cache", 1},
	} {
		if _, err := cl.ApplyFile(ctxFor(t, 30*time.Second), "../../testdata/samples/"+file, ns); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		vc := waitFor(t, ns, want.name, 2*time.Minute, file+" Steady", steadyWith(want.pods))
		writable(t, vc)
	}
	if _, err := cl.ApplyFile(ctxFor(t, 30*time.Second), "../../testdata/samples/cluster.yaml", ns); err != nil {
		t.Fatalf("cluster.yaml: %v", err)
	}
	vc := waitFor(t, ns, "shop", 2*time.Minute, "cluster.yaml Steady", steadyCluster(3, 2))
	clusterCheck(t, vc, vc.Status.Nodes[0].IP)
}
