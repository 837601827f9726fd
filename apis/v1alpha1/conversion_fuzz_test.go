package v1alpha1

import (
	"math/rand"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/diff"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	"sigs.k8s.io/randfill"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// The round trips of cluster-api's conversion fuzz tests (util/conversion.FuzzTestFunc):
// a random object of one version, converted to the other and back, comes back semantically
// equal, for every kind and in both directions. A field added to one version and forgotten
// by the conversion, or a mapping that is not one-to-one, fails here.

// kind builds empty objects of one kind in both versions; iterations is how many random
// objects go each way: cluster-api's 10000, except for ValkeyCluster, whose random
// Kubernetes scheduling and resource fields make one a hundred times bigger (2000 take
// about two seconds).
type kind struct {
	name       string
	spoke      func() conversion.Convertible
	hub        func() conversion.Hub
	iterations int
}

var kinds = []kind{
	{"ValkeyCluster", func() conversion.Convertible { return &ValkeyCluster{} }, func() conversion.Hub { return &v1beta1.ValkeyCluster{} }, 2000},
	{"ValkeyBackup", func() conversion.Convertible { return &ValkeyBackup{} }, func() conversion.Hub { return &v1beta1.ValkeyBackup{} }, 10000},
	{"ValkeyACL", func() conversion.Convertible { return &ValkeyACL{} }, func() conversion.Hub { return &v1beta1.ValkeyACL{} }, 10000},
}

func TestConversionRoundTrips(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name+"/v1alpha1-v1beta1-v1alpha1", func(t *testing.T) {
			seed := rand.Int63()
			defer func() {
				if t.Failed() {
					t.Logf("randfill seed %d", seed)
				}
			}()
			f := apiFiller(randfill.New().RandSource(rand.NewSource(seed)))
			for range k.iterations {
				spoke := k.spoke()
				f.Fill(spoke)
				if !spokeRoundTrips(t, k, spoke) {
					return
				}
			}
		})
		t.Run(k.name+"/v1beta1-v1alpha1-v1beta1", func(t *testing.T) {
			seed := rand.Int63()
			defer func() {
				if t.Failed() {
					t.Logf("randfill seed %d", seed)
				}
			}()
			f := apiFiller(randfill.New().RandSource(rand.NewSource(seed)))
			for range k.iterations {
				hub := k.hub()
				f.Fill(hub)
				if !hubRoundTrips(t, k, hub) {
					return
				}
			}
		})
	}
}

// FuzzConversionRoundTrips drives the same round trips from the Go fuzzer's bytes, which
// steer randfill: `go test -fuzz FuzzConversionRoundTrips ./apis/v1alpha1`.
func FuzzConversionRoundTrips(f *testing.F) {
	f.Add([]byte("valkey"))
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Fuzz(func(t *testing.T, data []byte) {
		filler := apiFiller(randfill.NewFromGoFuzz(data))
		for _, k := range kinds {
			spoke, hub := k.spoke(), k.hub()
			filler.Fill(spoke)
			filler.Fill(hub)
			spokeRoundTrips(t, k, spoke)
			hubRoundTrips(t, k, hub)
		}
	})
}

// spokeRoundTrips checks v1alpha1 -> v1beta1 -> v1alpha1: the same object, and no
// annotation, since v1beta1 can hold every v1alpha1 field.
func spokeRoundTrips(t *testing.T, k kind, spoke conversion.Convertible) bool {
	t.Helper()
	hub := k.hub()
	if err := spoke.DeepCopyObject().(conversion.Convertible).ConvertTo(hub); err != nil {
		t.Errorf("%s to v1beta1: %v", k.name, err)
		return false
	}
	back := k.spoke()
	if err := back.ConvertFrom(hub); err != nil {
		t.Errorf("%s from v1beta1: %v", k.name, err)
		return false
	}
	if a, ok := annotations(back)[AnnotationV1beta1Fields]; ok {
		t.Errorf("%s from v1beta1 carries %s=%s, though it came from v1alpha1", k.name, AnnotationV1beta1Fields, a)
		return false
	}
	if !apiequality.Semantic.DeepEqual(spoke, back) {
		t.Errorf("%s v1alpha1 -> v1beta1 -> v1alpha1 changed it (- before, + after):\n%s", k.name, diff.Diff(spoke, back))
		return false
	}
	return true
}

// hubRoundTrips checks v1beta1 -> v1alpha1 -> v1beta1: the same object, the annotation that
// carried what v1alpha1 lacks removed.
func hubRoundTrips(t *testing.T, k kind, hub conversion.Hub) bool {
	t.Helper()
	if vc, ok := hub.(*v1beta1.ValkeyCluster); ok && v1beta1.SentinelRefusal(&vc.Spec) != "" {
		return true // the API server never holds it: v1beta1's rules refuse it
	}
	spoke := k.spoke()
	if err := spoke.ConvertFrom(hub.DeepCopyObject().(conversion.Hub)); err != nil {
		t.Errorf("%s from v1beta1: %v", k.name, err)
		return false
	}
	back := k.hub()
	if err := spoke.ConvertTo(back); err != nil {
		t.Errorf("%s to v1beta1: %v", k.name, err)
		return false
	}
	if !apiequality.Semantic.DeepEqual(hub, back) {
		t.Errorf("%s v1beta1 -> v1alpha1 -> v1beta1 changed it (- before, + after):\n%s", k.name, diff.Diff(hub, back))
		return false
	}
	return true
}

func annotations(obj runtime.Object) map[string]string {
	return obj.(metav1.Object).GetAnnotations()
}

// apiFiller makes f apimachinery's API fuzzer (metadata as the API server would hold it)
// with withValidValues, as cluster-api's GetFuzzer.
func apiFiller(f *randfill.Filler) *randfill.Filler {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := v1beta1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	f.NilChance(.5).NumElements(0, 2).Funcs(metafuzzer.Funcs(serializer.NewCodecFactory(scheme))...)
	return withValidValues(f)
}

// withValidValues restricts the fields whose representation the conversion maps (a count,
// an enum's spelling, a reference that is absent or names something) to the values their
// CRD schema accepts, as cluster-api's fuzzer functions do: a v1alpha1 replicas of 0 or a
// role "Primary" cannot reach the conversion through the API server, and mapping them
// one-to-one would mean mapping nonsense. Every other field is left to randfill.
func withValidValues(f *randfill.Filler) *randfill.Filler {
	return f.Funcs(
		// Times as the API server stores them (whole seconds, UTC): JSON in the annotation
		// keeps no more.
		func(t *metav1.Time, c randfill.Continue) { *t = metav1.Unix(c.Int63n(1<<33), 0).Rfc3339Copy() },
		func(d *metav1.Duration, c randfill.Continue) { d.Duration = time.Duration(c.Int63n(1 << 50)) },
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(1<<40), resource.BinarySI)
		},

		func(s *ValkeyClusterSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			s.Replicas = 1 + c.Int31n(32)
			if s.Storage.Size == nil {
				s.Storage.Size = resource.NewQuantity(1+c.Int63n(1<<40), resource.BinarySI)
			}
		},
		func(m *TLSMode, c randfill.Continue) { *m = pick(c, "", TLSDisabled, TLSBoth, TLSOnly) },
		func(r *NodeRole, c randfill.Continue) {
			*r = pick(c, "", NodeRolePrimary, NodeRoleReplica, NodeRoleUnknown)
		},
		func(s *ValkeyBackupStatus, c randfill.Continue) {
			c.FillNoCustom(s)
			s.Mode = pick(c, "", "replication", "cluster")
		},

		func(s *v1beta1.ValkeyClusterSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.Replicas != nil {
				*s.Replicas = c.Int31n(32)
			}
		},
		func(m *v1beta1.TLSMode, c randfill.Continue) {
			*m = pick(c, "", v1beta1.TLSDisabled, v1beta1.TLSPlainAndTLS, v1beta1.TLSOnly)
		},
		func(r *v1beta1.NodeRole, c randfill.Continue) {
			*r = pick(c, "", v1beta1.NodeRolePrimary, v1beta1.NodeRoleReplica, v1beta1.NodeRoleUnknown)
		},
		func(m *v1beta1.BackupMode, c randfill.Continue) {
			*m = pick(c, "", v1beta1.BackupModeReplication, v1beta1.BackupModeCluster)
		},
		func(r *v1beta1.SecretRef, c randfill.Continue) { r.Name = "s" + c.String(20) },
	)
}

func pick[T any](c randfill.Continue, values ...T) T { return values[c.Intn(len(values))] }
