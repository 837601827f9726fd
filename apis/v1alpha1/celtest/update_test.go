package celtest

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestUpdateValidation creates a ValkeyCluster with one spec, replaces the spec with another
// and checks that the API server accepts or refuses the change. Transition rules (immutable
// and expand-only fields) only run on updates, so each is proven here in both directions.
func TestUpdateValidation(t *testing.T) {
	const (
		topology     = "topology is immutable: create a new ValkeyCluster to change it"
		clusterTLS   = "a Cluster topology cannot turn TLS on or off once created"
		profile      = "profile is immutable: create a new ValkeyCluster to change it"
		storageClass = "storage.storageClassName is immutable once set: create a new ValkeyCluster to move the data to another storage class"
		standalone   = "a Standalone ValkeyCluster runs exactly one pod and replicas defaults to 3: set spec.replicas to 1, or use topology Replication for more pods"
		secretOff    = "auth.existingSecret is set but auth.enabled is false: remove auth.existingSecret, or set auth.enabled to true"
		shardsAlone  = "spec.shards changes alone: a resharding moves data between shards"
		tlsOn        = "tls.mode cannot go from Disabled to TLSOnly at once"
		tlsOff       = "tls.mode cannot go from TLSOnly to Disabled at once"
		asleepKeeps  = "spec.hibernate is set and cleared alone, and a hibernated cluster keeps its replicas, shards and image"
		cacheAsleep  = "hibernate stops every pod, and only the Durable profile keeps data across a stop"
	)
	cases := []struct {
		name, from, to, want string
	}{
		// topology
		{"topology Replication to Standalone", "{topology: Replication, replicas: 1}", "{topology: Standalone, replicas: 1}", topology},
		{"topology Standalone to Replication", "{topology: Standalone, replicas: 1}", "{topology: Replication, replicas: 1}", topology},
		{"defaulted topology to Standalone", "{replicas: 1}", "{topology: Standalone, replicas: 1}", topology},
		{"defaulted topology written out", "{}", "{topology: Replication}", ""},

		{"topology Replication to Cluster", "{topology: Replication}", "{topology: Cluster}", topology},
		{"topology Cluster to Replication", "{topology: Cluster}", "{topology: Replication}", topology},

		// shards
		{"shards grow", "{topology: Cluster, shards: 3}", "{topology: Cluster, shards: 5}", ""},
		{"shards shrink", "{topology: Cluster, shards: 5}", "{topology: Cluster, shards: 3}", ""},
		{"defaulted shards written out", "{topology: Cluster}", "{topology: Cluster, shards: 3}", ""},
		{"shards and replicas together", "{topology: Cluster, shards: 3, replicas: 2}", "{topology: Cluster, shards: 4, replicas: 3}", shardsAlone},
		{"shards and image together", "{topology: Cluster, shards: 3}", "{topology: Cluster, shards: 4, image: 'valkey/valkey:9.1'}", shardsAlone},
		{"replicas and image of a cluster together", "{topology: Cluster, shards: 3}", "{topology: Cluster, shards: 3, replicas: 2, image: 'valkey/valkey:9.1'}", ""},

		// hibernate
		{"hibernate", "{replicas: 3}", "{replicas: 3, hibernate: true}", ""},
		{"hibernate and scale at once", "{replicas: 3}", "{replicas: 2, hibernate: true}", asleepKeeps},
		{"hibernate and reshard at once", "{topology: Cluster, shards: 3}", "{topology: Cluster, shards: 2, hibernate: true}", asleepKeeps},
		{"wake", "{replicas: 3, hibernate: true}", "{replicas: 3, hibernate: false}", ""},
		{"wake by removing the field", "{replicas: 3, hibernate: true}", "{replicas: 3}", ""},
		{"scale while hibernated", "{replicas: 3, hibernate: true}", "{replicas: 5, hibernate: true}", asleepKeeps},
		{"wake and scale at once", "{replicas: 3, hibernate: true}", "{replicas: 5}", asleepKeeps},
		{"reshard while hibernated", "{topology: Cluster, shards: 3, hibernate: true}", "{topology: Cluster, shards: 4, hibernate: true}", asleepKeeps},
		{"image while hibernated", "{hibernate: true}", "{hibernate: true, image: 'valkey/valkey:9.1'}", asleepKeeps},
		{"hibernate a Cache cluster", "{profile: Cache}", "{profile: Cache, hibernate: true}", cacheAsleep},

		// profile
		{"profile Durable to Cache", "{profile: Durable}", "{profile: Cache}", profile},
		{"profile Cache to Durable", "{profile: Cache}", "{profile: Durable}", profile},
		{"defaulted profile to Cache", "{}", "{profile: Cache}", profile},
		{"defaulted profile written out", "{}", "{profile: Durable}", ""},

		// storage.size: expand-only
		{"size shrinks", "storage: {size: 2Gi}", "storage: {size: 1Gi}",
			"storage.size cannot shrink from 2Gi to 1Gi: a PersistentVolumeClaim can only grow, so set a size of at least 2Gi"},
		{"size shrinks by one byte", "storage: {size: 1Gi}", "storage: {size: 1073741823}", "storage.size cannot shrink from 1Gi to 1073741823"},
		{"defaulted size shrinks", "{}", "storage: {size: 512Mi}", "storage.size cannot shrink from 1Gi to 512Mi"},
		{"size left out after growing", "storage: {size: 2Gi}", "{}", "storage.size cannot shrink from 2Gi to 1Gi"},
		{"size grows", "storage: {size: 2Gi}", "storage: {size: 3Gi}", ""},
		{"size grows from the default", "{}", "storage: {size: 10G}", ""},
		{"size written in other units", "storage: {size: 2Gi}", "storage: {size: 2048Mi}", ""},
		{"size as a number of bytes", "storage: {size: 1Gi}", "storage: {size: 1073741824}", ""},

		// storage.storageClassName: immutable once set
		{"storage class changes", "storage: {storageClassName: fast}", "storage: {storageClassName: slow}", storageClass},
		{"storage class removed", "storage: {storageClassName: fast}", "storage: {}", storageClass},
		{"storage class emptied", "storage: {storageClassName: fast}", `storage: {storageClassName: ""}`, storageClass},
		{"storage class set", "storage: {}", "storage: {storageClassName: fast}", ""},
		{"storage class kept while growing", "storage: {storageClassName: fast, size: 1Gi}", "storage: {storageClassName: fast, size: 2Gi}", ""},

		// replicas
		{"replication scales up", "{replicas: 3}", "{replicas: 5}", ""},
		{"replication scales down", "{replicas: 3}", "{replicas: 1}", ""},
		{"standalone scales up", "{topology: Standalone, replicas: 1}", "{topology: Standalone, replicas: 2}", standalone},
		{"replicas to zero", "{replicas: 3}", "{replicas: 0}", "should be greater than or equal to 1"},

		// auth
		{"auth disabled with an existing secret", "auth: {existingSecret: {name: pw}}", "auth: {enabled: false, existingSecret: {name: pw}}", secretOff},
		{"existing secret removed, auth disabled", "auth: {existingSecret: {name: pw}}", "auth: {enabled: false}", ""},
		{"existing secret changed", "auth: {existingSecret: {name: pw}}", "auth: {existingSecret: {name: pw2, key: k}}", ""},

		// tls: on and off through Both
		{"cluster tls turned on", "{topology: Cluster}", "{topology: Cluster, tls: {mode: Both, secretName: s}}", clusterTLS},
		{"cluster tls turned off", "{topology: Cluster, tls: {mode: Both, secretName: s}}", "{topology: Cluster, tls: {mode: Disabled}}", clusterTLS},
		{"cluster tls Both to TLSOnly", "{topology: Cluster, tls: {mode: Both, secretName: s}}", "{topology: Cluster, tls: {mode: TLSOnly, secretName: s}}", ""},
		{"cluster tls issuer for a Secret", "{topology: Cluster, tls: {mode: TLSOnly, issuer: {name: ca}}}", "{topology: Cluster, tls: {mode: TLSOnly, secretName: c-tls}}", ""},
		{"tls Disabled to TLSOnly", "{}", "tls: {mode: TLSOnly, secretName: s}", tlsOn},
		{"tls explicitly Disabled to TLSOnly", "tls: {mode: Disabled}", "tls: {mode: TLSOnly, secretName: s}", tlsOn},
		{"tls Disabled to Both", "{}", "tls: {mode: Both, secretName: s}", ""},
		{"tls Both to TLSOnly", "tls: {mode: Both, secretName: s}", "tls: {mode: TLSOnly, secretName: s}", ""},
		{"tls TLSOnly to Disabled", "tls: {mode: TLSOnly, secretName: s}", "tls: {mode: Disabled}", tlsOff},
		{"tls TLSOnly removed", "tls: {mode: TLSOnly, secretName: s}", "{}", tlsOff},
		{"tls TLSOnly to Both", "tls: {mode: TLSOnly, secretName: s}", "tls: {mode: Both, secretName: s}", ""},
		{"tls Secret renamed", "tls: {mode: TLSOnly, secretName: s}", "tls: {mode: TLSOnly, secretName: s2}", ""},

		// everything that may change does
		{"mutable fields change", "{}", `
image: valkey/valkey:8.1
replicas: 5
resources: {limits: {memory: 2Gi}}
config: {maxmemory-samples: '10'}
nodeSelector: {disk: ssd}
tolerations: [{key: dedicated, operator: Exists}]
topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}]
podDisruptionBudget: {enabled: false}`, ""},
		{"owned directive added", "{}", "config: {Port: '7000'}", "config sets Port, a directive the operator owns"},
	}
	vkc := clusters(t)
	ctx := context.Background()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := fmt.Sprintf("vk-%d", i)
			created, err := vkc.Create(ctx, object(t, name, c.from), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating with %s: %v", c.from, err)
			}
			created.Object["spec"] = parseYAML(t, c.to)
			_, err = vkc.Update(ctx, created, metav1.UpdateOptions{})
			check(t, err, c.want)
		})
	}
}

// TestUnrelatedUpdateOfOldObject checks that transition rules do not get in the way of
// changes that do not touch their fields (labels, here), which every controller makes.
func TestUnrelatedUpdateOfOldObject(t *testing.T) {
	vkc := clusters(t)
	ctx := context.Background()
	created, err := vkc.Create(ctx, object(t, "vk", "{topology: Standalone, replicas: 1, storage: {size: 5Gi, storageClassName: fast}}"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.SetLabels(map[string]string{"team": "cache"})
	if _, err := vkc.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Errorf("label update refused: %v", err)
	}
}
