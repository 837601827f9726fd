package operatorsuite

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// samplesDir holds the manifests users start from (make demo applies replication.yaml).
const samplesDir = "../../config/samples/"

// notRunHere are the samples this test does not bring up, each with why; every other file of
// config/samples must be brought up below (docs/samples_test.go creates every object of every
// sample against an API server).
var notRunHere = map[string]string{
	"restore.yaml": "restores a named ValkeyBackup, which must exist and be Completed in a store; TestRestore* tests restoring end to end",
}

// sample is one file of config/samples and what it brings up: a cluster, ready when ready
// holds (and taking writes through its client Service in plain TCP when writes), or a ValkeyACL.
type sample struct {
	file, cluster string
	ready         func(*v1alpha1.ValkeyCluster) bool
	writes        bool
	acl           string
}

// TestSamplesBecomeReady applies every sample of config/samples, in the order a user would
// (the ones that name another's objects after it), on the local cluster with cert-manager, and
// waits until each cluster is Steady with every pod ready and each ValkeyACL is applied.
func TestSamplesBecomeReady(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 12*time.Minute)
	if err := cl.StartCertManager(ctx); err != nil {
		t.Fatalf("starting cert-manager: %v", err)
	}
	samples := []sample{
		{"standalone-cache.yaml", "cache", steadyWith(1), true, ""},
		{"replication.yaml", "demo", steadyWith(3), true, ""},
		{"acl.yaml", "", nil, false, "checkout"},
		{"cluster.yaml", "shop", steadyCluster(3, 2), false, ""},
		{"networkpolicy.yaml", "fenced", steadyWith(2), false, ""},
		{"backup-schedule.yaml", "orders", steadyWith(2), true, ""},
		{"tls-cert-manager.yaml", "secure", steadyWith(3), false, ""},
		{"production.yaml", "payments", steadyWith(3), false, ""},
	}
	files, err := filepath.Glob(samplesDir + "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		if why, ok := notRunHere[name]; ok {
			t.Logf("%s is not brought up here: %s", name, why)
			continue
		}
		if !slices.ContainsFunc(samples, func(s sample) bool { return s.file == name }) {
			t.Errorf("config/samples/%s is neither brought up by this test nor listed in notRunHere", name)
		}
	}

	for _, s := range samples {
		if _, err := cl.ApplyFile(ctxFor(t, 30*time.Second), samplesDir+s.file, ns); err != nil {
			t.Fatalf("%s: %v", s.file, err)
		}
		if s.acl != "" {
			waitACL(t, ns, s.acl, "Applied", "")
			continue
		}
		vc := waitFor(t, ns, s.cluster, 4*time.Minute, s.file+" Steady and ready", s.ready)
		if s.writes {
			writable(t, vc)
		}
		if s.cluster == "shop" {
			clusterCheck(t, vc, vc.Status.Nodes[0].IP)
		}
	}
}
