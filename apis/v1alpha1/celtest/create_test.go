package celtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// TestCreateValidation creates one ValkeyCluster per case and checks that the API server
// accepts the good specs and refuses each bad one with the message users will read.
func TestCreateValidation(t *testing.T) {
	const (
		standalone  = "a Standalone ValkeyCluster runs exactly one pod and replicas defaults to 3: set spec.replicas to 1, or use topology Replication for more pods"
		secretOff   = "auth.existingSecret is set but auth.enabled is false: remove auth.existingSecret, or set auth.enabled to true"
		keyName     = "config names must be valkey.conf directive names: letters, digits, '-', '_' and '.', at most 128 characters"
		sizeZero    = "storage.size must be greater than zero"
		valueLine   = "config values must be one line: remove newlines, tabs and other control characters"
		minReplicas = "durability.minReplicasToWrite must be lower than replicas (the pods include the primary): lower it, or raise replicas"
		shardsOnly  = "spec.shards is for topology Cluster: remove it, or set topology to Cluster"
		cacheAsleep = "hibernate stops every pod, and only the Durable profile keeps data across a stop"
	)
	cases := []struct {
		name, spec, want string
	}{
		// hibernate
		{"hibernated Durable cluster", "hibernate: true", ""},
		{"hibernated Cache cluster", "profile: Cache\nhibernate: true", cacheAsleep},
		{"Cache cluster not hibernated", "profile: Cache\nhibernate: false", ""},

		// topology and replicas
		{"replication with 3", "topology: Replication\nreplicas: 3", ""},
		{"replication with 1", "topology: Replication\nreplicas: 1", ""},
		{"standalone with 1", "topology: Standalone\nreplicas: 1", ""},
		{"standalone with 3", "topology: Standalone\nreplicas: 3", standalone},
		{"standalone with replicas left to the default", "topology: Standalone", standalone},
		{"unknown topology", "topology: Sharded", `Unsupported value: "Sharded"`},
		{"topology in other case", "topology: replication", `Unsupported value: "replication"`},
		{"cluster with shards", "topology: Cluster\nshards: 3\nreplicas: 2", ""},
		{"cluster with the default shards", "topology: Cluster", ""},
		{"cluster of one shard", "topology: Cluster\nshards: 1", ""},
		{"cluster with no shards", "topology: Cluster\nshards: 0", "should be greater than or equal to 1"},
		{"cluster with too many shards", "topology: Cluster\nshards: 129", "should be less than or equal to 128"},
		{"shards on replication", "topology: Replication\nshards: 3", shardsOnly},
		{"shards on the default topology", "shards: 3", shardsOnly},
		{"no replicas", "replicas: 0", "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"},
		{"negative replicas", "replicas: -1", "should be greater than or equal to 1"},

		// failover detection and durability
		{"detection tuned", "failover: {probeIntervalSeconds: 2, failureThreshold: 5}", ""},
		{"zero probe interval", "failover: {probeIntervalSeconds: 0}", "should be greater than or equal to 1"},
		{"min replicas below replicas", "replicas: 3\ndurability: {minReplicasToWrite: 2}", ""},
		{"min replicas equal to replicas", "replicas: 3\ndurability: {minReplicasToWrite: 3}", minReplicas},
		{"min replicas above the default replicas", "durability: {minReplicasToWrite: 5}", minReplicas},
		{"min replicas on a single pod", "replicas: 1\ndurability: {minReplicasToWrite: 1}", minReplicas},
		{"no lag allowed", "durability: {maxLagSeconds: 0}", "should be greater than or equal to 1"},

		// profile and image
		{"cache", "profile: Cache", ""},
		{"unknown profile", "profile: Persistent", `Unsupported value: "Persistent"`},
		{"empty image", `image: ""`, "spec.image in body should be at least 1 chars long"},

		// storage
		{"size as a string", "storage: {size: 10Gi}", ""},
		{"size as a number of bytes", "storage: {size: 1073741824}", ""},
		{"zero size", "storage: {size: 0}", sizeZero},
		{"zero size as a string", `storage: {size: "0Gi"}`, sizeZero},
		{"negative size", "storage: {size: -1Gi}", sizeZero},
		{"size that is no quantity", "storage: {size: big}", "spec.storage.size in body should match"},

		// auth
		{"existing secret", "auth: {enabled: true, existingSecret: {name: pw, key: pass}}", ""},
		{"existing secret, enabled by default", "auth: {existingSecret: {name: pw}}", ""},
		{"existing secret with auth disabled", "auth: {enabled: false, existingSecret: {name: pw}}", secretOff},
		{"tls Both with a Secret", "tls: {mode: Both, secretName: pw-tls}", ""},
		{"tls TLSOnly from the start", "tls: {mode: TLSOnly, secretName: pw-tls}", ""},
		{"tls without a Secret", "tls: {mode: Both}", "tls.mode Both or TLSOnly needs tls.secretName"},
		{"tls from an issuer", "tls: {mode: Both, issuer: {name: ca}}", ""},
		{"tls from a ClusterIssuer", "tls: {mode: TLSOnly, issuer: {name: ca, kind: ClusterIssuer, duration: 2h, renewBefore: 1h}}", ""},
		{"tls Secret and issuer", "tls: {mode: Both, secretName: s, issuer: {name: ca}}", "tls.secretName and tls.issuer are exclusive"},
		{"tls issuer kind unknown", "tls: {mode: Both, issuer: {name: ca, kind: Vault}}", "Unsupported value"},
		{"tls issuer without a name", "tls: {mode: Both, issuer: {name: ''}}", "spec.tls.issuer.name"},
		{"network policy", "networkPolicy: {enabled: true, from: [{podSelector: {matchLabels: {role: app}}}]}", ""},
		{"tls mode unknown", "tls: {mode: Required, secretName: s}", "Unsupported value"},
		{"tls with the Cluster topology", "{topology: Cluster, tls: {mode: TLSOnly, issuer: {name: ca}}}", ""},
		{"tls directive in config", "config: {tls-port: '6390'}", "config sets tls-port, a directive the operator owns"},
		{"auth disabled", "auth: {enabled: false}", ""},
		{"existing secret without a name", "auth: {existingSecret: {key: pass}}", `spec.auth.existingSecret.name: Required value`},
		{"existing secret with an empty name", `auth: {existingSecret: {name: ""}}`, "spec.auth.existingSecret.name in body should be at least 1 chars long"},
		{"existing secret with a bad key", `auth: {existingSecret: {name: pw, key: "a/b"}}`, "spec.auth.existingSecret.key in body should match"},

		// config
		{"tunable directives", "config: {maxmemory-samples: '10', hz: '50', client-output-buffer-limit: 'pubsub 64mb 16mb 60', appendfsync: always}", ""},
		{"maxmemory is the user's to set", "config: {maxmemory: 100mb}", ""},
		{"maxmemory in other case", "config: {MaxMemory: 100mb}", ""},
		{"module configuration name", "config: {search.timeout: '100'}", ""},
		{"empty value", `config: {notify-keyspace-events: ""}`, ""},
		{"name with a space", `config: {"port 7000": "x"}`, keyName},
		{"name with a newline", `config: {"hz\nport": "7000"}`, keyName},
		{"empty name", `config: {"": "x"}`, keyName},
		{"name too long", fmt.Sprintf("config: {%s: x}", strings.Repeat("a", 129)), keyName},
		{"name of the longest length", fmt.Sprintf("config: {%s: x}", strings.Repeat("a", 128)), ""},
		{"value with a newline", `config: {hz: "10\nport 7000"}`, valueLine},
		{"value with a carriage return", `config: {hz: "10\rport 7000"}`, valueLine},
		{"value with a tab", `config: {hz: "10\t"}`, valueLine},
		{"value too long", fmt.Sprintf("config: {hz: %s}", strings.Repeat("1", 1025)), "spec.config.hz: Too long: may not be more than 1024 bytes"},
		{"value of the longest length", fmt.Sprintf("config: {hz: %s}", strings.Repeat("1", 1024)), ""},
		{"value with a delete character", "config: {hz: \"10\\x7f\"}", valueLine},

		// bounds and formats that would otherwise fail at run time (issue 11)
		{"the most replicas", "topology: Replication\nreplicas: 32", ""},
		{"too many replicas", "replicas: 100000", "spec.replicas: Invalid value: 100000: spec.replicas in body should be less than or equal to 32"},
		{"a memory limit of the minimum", "resources: {limits: {memory: 32Mi}}", ""},
		{"a memory limit too small", "resources: {limits: {memory: 1Mi}}", "resources.limits.memory is 1Mi: Valkey needs at least 32Mi"},
		{"requests below limits", "resources: {requests: {memory: 64Mi, cpu: 100m}, limits: {memory: 128Mi, cpu: '1'}}", ""},
		{"memory request above its limit", "resources: {requests: {memory: 256Mi}, limits: {memory: 128Mi}}", "a resource request is above its limit"},
		{"cpu request above its limit", "resources: {requests: {cpu: '2'}, limits: {cpu: 500m}}", "a resource request is above its limit"},
		{"one directive twice", "config: {hz: '10', HZ: '20'}", "config sets one directive in several spellings"},
		{"maxmemory that is no size", "config: {maxmemory: lots}", "are memory sizes"},
		{"maxmemory in gigabytes", "config: {maxmemory: 2gb}", ""},
		{"repl-backlog-size as bytes", "config: {repl-backlog-size: '1048576'}", ""},
		{"hz that is no number", "config: {hz: fast}", "take a whole number"},
		{"appendfsync sometimes", "config: {appendfsync: sometimes}", "appendfsync takes always, everysec or no"},
		{"activedefrag maybe", "config: {activedefrag: maybe}", "take yes or no"},
		{"activedefrag yes", "config: {activedefrag: 'yes'}", ""},
	}
	vkc := clusters(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := vkc.Create(context.Background(), object(t, fmt.Sprintf("vk-%d", i), c.spec), metav1.CreateOptions{})
			check(t, err, c.want)
		})
	}
}

// TestOwnedDirectivesRefused checks that the API server refuses every directive in
// v1beta1.OperatorOwnedDirectives, in any letter case, and names it as the user wrote it.
func TestOwnedDirectivesRefused(t *testing.T) {
	vkc := clusters(t)
	spellings := func(d string) []string {
		mixed := []byte(d)
		for i := 0; i < len(mixed); i += 2 {
			mixed[i] = strings.ToUpper(string(mixed[i]))[0]
		}
		return []string{d, strings.ToUpper(d), string(mixed)}
	}
	n := 0
	for _, d := range v1beta1.OperatorOwnedDirectives {
		for _, name := range spellings(d) {
			n++
			spec := fmt.Sprintf("config: {%q: 'x', maxmemory-samples: '5'}", name)
			_, err := vkc.Create(context.Background(), object(t, fmt.Sprintf("vk-%d", n), spec), metav1.CreateOptions{})
			checkRefused(t, err, "config sets "+name+", a directive the operator owns: remove it from spec.config")
		}
	}
}

// TestMaxProperties checks the bound on spec.config that keeps its CEL rules within the API
// server's cost budget.
func TestMaxProperties(t *testing.T) {
	vkc := clusters(t)
	config := func(n int) string {
		var b strings.Builder
		b.WriteString("config: {")
		for i := range n {
			fmt.Fprintf(&b, "k%d: v,", i)
		}
		b.WriteString("}")
		return b.String()
	}
	_, err := vkc.Create(context.Background(), object(t, "vk-64", config(64)), metav1.CreateOptions{})
	check(t, err, "")
	_, err = vkc.Create(context.Background(), object(t, "vk-65", config(65)), metav1.CreateOptions{})
	checkRefused(t, err, "spec.config: Too many: 65: must have at most 64 items")
}

// TestNamesThatDeriveValidNames: every object the operator derives from the name must be
// valid (Services are DNS-1035 labels, the pods' controller-revision-hash label is the name
// plus 11 characters).
func TestNamesThatDeriveValidNames(t *testing.T) {
	const clusterName = "a Cluster topology's name must be at most 47 characters"
	vkc := clusters(t)
	for _, c := range []struct{ name, spec, want string }{
		{strings.Repeat("a", 52), "replicas: 1", ""},
		{strings.Repeat("a", 53), "replicas: 1", "the name must be at most 52 characters"},
		{"1cache", "replicas: 1", "the name must start with a letter"},
		{"cache.prod", "replicas: 1", "the name must start with a letter"},
		{"cache-1", "replicas: 1", ""},
		{strings.Repeat("b", 47), "topology: Cluster", ""},
		{strings.Repeat("b", 48), "topology: Cluster", clusterName},
	} {
		_, err := vkc.Create(context.Background(), object(t, c.name, c.spec), metav1.CreateOptions{})
		check(t, err, c.want)
	}
}
