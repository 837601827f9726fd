package celtest

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestNewRulesOnCreate: every rule v1beta1 adds or rewords refuses a mistake with what to
// change, and accepts what it should.
func TestNewRulesOnCreate(t *testing.T) {
	const store = "store: {bucket: backups}"
	cases := []struct{ name, spec, want string }{
		{"an empty spec", "{}", ""},
		{"a Standalone with no count", "topology: Standalone", ""},
		{"a Standalone with no replica", "{topology: Standalone, replicas: 0}", ""},
		{"a Standalone with a replica", "{topology: Standalone, replicas: 1}", "a Standalone ValkeyCluster is one server with no replica"},
		{"a primary alone", "{topology: Replication, replicas: 0}", ""},
		{"too many replicas", "{replicas: 32}", "spec.replicas: Invalid value: 32"},
		{"minReplicasToWrite at the default count", "durability: {minReplicasToWrite: 1}", ""},
		{"minReplicasToWrite above the default count", "durability: {minReplicasToWrite: 2}", "durability.minReplicasToWrite is more than spec.replicas"},
		{"minReplicasToWrite at the count", "{replicas: 2, durability: {minReplicasToWrite: 2}}", ""},
		{"minReplicasToWrite on a Standalone", "{topology: Standalone, durability: {minReplicasToWrite: 1}}", "durability.minReplicasToWrite is more than spec.replicas"},
		{"PlainAndTLS with a Secret", "tls: {mode: PlainAndTLS, secretRef: {name: certs}}", ""},
		{"TLSOnly with an issuer", "tls: {mode: TLSOnly, issuerRef: {name: ca, kind: ClusterIssuer}, duration: 720h}", ""},
		{"PlainAndTLS with no certificate", "tls: {mode: PlainAndTLS}", "tls.mode PlainAndTLS or TLSOnly needs tls.secretRef"},
		{"v1alpha1's Both", "tls: {mode: Both, secretRef: {name: certs}}", `Unsupported value: "Both"`},
		{"a Secret and an issuer", "tls: {mode: TLSOnly, secretRef: {name: certs}, issuerRef: {name: ca}}", "tls.secretRef and tls.issuerRef are exclusive"},
		{"a duration without an issuer", "tls: {mode: TLSOnly, secretRef: {name: certs}, duration: 720h}", "tls.duration and tls.renewBefore are the lifetime of the certificate an issuer issues"},
		{"a password Secret with auth off", "auth: {enabled: false, passwordSecretRef: {name: pw}}", "auth.passwordSecretRef is set but auth.enabled is false"},
		{"pod knobs", "{imagePullPolicy: IfNotPresent, imagePullSecrets: [{name: regcred}], podLabels: {team: cache}, podAnnotations: {'prometheus.io/scrape': 'true'}, priorityClassName: high, serviceAccountName: valkey}", ""},
		{"an unknown pull policy", "imagePullPolicy: Sometimes", `Unsupported value: "Sometimes"`},
		{"a selector label", "podLabels: {'app.kubernetes.io/instance': other}", "podLabels sets app.kubernetes.io/instance, a label the operator selects its pods by"},
		{"an operator label", "podLabels: {'valkey.fsm.dev/role': primary}", "podLabels sets valkey.fsm.dev/role, a label the operator selects its pods by"},
		{"an operator annotation", "podAnnotations: {'valkey.fsm.dev/revision': x}", "podAnnotations sets valkey.fsm.dev/revision, an annotation under valkey.fsm.dev/"},
		{"a load balancer", "service: {type: LoadBalancer, annotations: {'service.beta.kubernetes.io/aws-load-balancer-internal': 'true'}}", ""},
		{"an ExternalName service", "service: {type: ExternalName}", `Unsupported value: "ExternalName"`},
		{"backups on the default credential chain", "backup: {" + store + "}", ""},
		{"backups with a credentials Secret", "backup: {store: {bucket: backups, credentialsSecretRef: {name: s3}}}", ""},
		{"a final backup", "{deletion: {finalBackup: true}, backup: {" + store + "}}", ""},
		{"a final backup with no store", "deletion: {finalBackup: true}", "deletion.finalBackup writes a last backup to spec.backup.store"},
		{"a new cluster restores without intent", "restoreFrom: {backup: nightly}", ""},
		{"a Sentinel topology with no sentinel settings", "topology: Sentinel", ""},
		{"five sentinels with a quorum of two", "{topology: Sentinel, sentinel: {replicas: 5, quorum: 2, downAfter: 10s, failoverTimeout: 2m}}", ""},
		{"sentinel settings on a Replication topology", "sentinel: {replicas: 3}", "spec.sentinel is for topology Sentinel"},
		{"an even sentinel count", "{topology: Sentinel, sentinel: {replicas: 4}}", "sentinel.replicas must be odd"},
		{"one sentinel", "{topology: Sentinel, sentinel: {replicas: 1}}", "should be greater than or equal to 3"},
		{"a quorum above the default count", "{topology: Sentinel, sentinel: {quorum: 4}}", "sentinel.quorum is more than sentinel.replicas"},
		{"a quorum above the count", "{topology: Sentinel, sentinel: {replicas: 5, quorum: 6}}", "sentinel.quorum is more than sentinel.replicas"},
		{"a short down-after", "{topology: Sentinel, sentinel: {downAfter: 1s}}", "sentinel.downAfter must be at least 5s"},
		{"a short failover timeout", "{topology: Sentinel, sentinel: {failoverTimeout: 3s}}", "sentinel.failoverTimeout must be at least 10s"},
		{"replica-priority in config of a Sentinel topology", "{topology: Sentinel, config: {Replica-Priority: '10'}}", "config sets replica-priority, which the operator owns in the Sentinel topology"},
		{"replica-priority in config of a Replication topology", "config: {replica-priority: '10'}", ""},
		{"a Sentinel topology without a replica", "{topology: Sentinel, replicas: 0}", "a Sentinel topology needs at least one replica"},
		{"TLS in a Sentinel topology", "{topology: Sentinel, tls: {mode: PlainAndTLS, secretRef: {name: certs}}}", "the Sentinel topology does not run TLS yet"},
	}
	vkc := clusters(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := vkc.Create(context.Background(), object(t, fmt.Sprintf("c-%d", i), c.spec), metav1.CreateOptions{})
			check(t, err, c.want)
		})
	}
}

// TestFixedSecretKeysHaveNoKeyField: a TLS Secret's keys are fixed, so tls.secretRef has no
// key; a strict client is told so instead of the key being dropped silently.
func TestFixedSecretKeysHaveNoKeyField(t *testing.T) {
	_, err := clusters(t).Create(context.Background(), object(t, "c", "tls: {mode: TLSOnly, secretRef: {name: certs, key: tls.crt}}"), metav1.CreateOptions{FieldValidation: "Strict"})
	if err == nil || !contains(err.Error(), `unknown field "spec.tls.secretRef.key"`) {
		t.Errorf("tls.secretRef.key: %v, want an unknown field", err)
	}
}

// TestRestoringIntoARunningClusterNeedsIntent: restoreFrom set or changed on an existing
// cluster is refused unless discardCurrentData accepts what it discards; a cluster created
// with restoreFrom keeps it through other changes.
func TestRestoringIntoARunningClusterNeedsIntent(t *testing.T) {
	vkc := clusters(t)
	ctx := context.Background()
	running, err := vkc.Create(ctx, object(t, "running", "{}"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const refused = "restoring into a running cluster replaces all of its data with the backup's"
	update := func(base *unstructured.Unstructured, restoreFrom string) (*unstructured.Unstructured, error) {
		edited := base.DeepCopy()
		if err := unstructured.SetNestedField(edited.Object, parseYAML(t, restoreFrom), "spec", "restoreFrom"); err != nil {
			t.Fatal(err)
		}
		return vkc.Update(ctx, edited, metav1.UpdateOptions{})
	}
	_, err = update(running, "{backup: nightly}")
	check(t, err, refused)
	_, err = update(running, "{path: ns/c/nightly, store: {bucket: backups}}")
	check(t, err, refused)
	restored, err := update(running, "{backup: nightly, discardCurrentData: true}")
	check(t, err, "")

	created, err := vkc.Create(ctx, object(t, "restored", "restoreFrom: {path: ns/c/nightly, store: {bucket: backups}}"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scaled := created.DeepCopy()
	if err := unstructured.SetNestedField(scaled.Object, int64(2), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	if created, err = vkc.Update(ctx, scaled, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("scaling a cluster created with restoreFrom: %v", err)
	}
	for name, source := range map[string]string{
		"another backup": "{backup: nightly}",
		"another path":   "{path: ns/c/weekly, store: {bucket: backups}}",
		"another bucket": "{path: ns/c/nightly, store: {bucket: archive}}",
		"another prefix": "{path: ns/c/nightly, store: {bucket: backups, prefix: old/}}",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := update(created, source)
			check(t, err, refused)
		})
	}
	if restored != nil {
		_, err = update(restored, "{backup: nightly}")
		check(t, err, "")
	}
}

// TestTheScaleSubresourceIsSpecReplicas: kubectl scale reads and writes spec.replicas, the
// replicas of each primary.
func TestTheScaleSubresourceIsSpecReplicas(t *testing.T) {
	vkc := clusters(t)
	ctx := context.Background()
	if _, err := vkc.Create(ctx, object(t, "scaled", "replicas: 2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	scale, err := vkc.Get(ctx, "scaled", metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(scale.Object, "spec", "replicas"); n != 2 {
		t.Errorf("scale spec.replicas %d, want 2", n)
	}
	if err := unstructured.SetNestedField(scale.Object, int64(3), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	if _, err := vkc.Update(ctx, scale, metav1.UpdateOptions{}, "scale"); err != nil {
		t.Fatal(err)
	}
	got, err := vkc.Get(ctx, "scaled", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); n != 3 {
		t.Errorf("after scaling to 3: spec.replicas %d", n)
	}
}

// TestTheSentinelsChangeWithinTheirRules: the sentinel count may change to another odd count
// (the operator moves it one sentinel at a time), an even one is refused; a change of
// auth.enabled and of the sentinels' volume size are refused with what to do; the other
// settings may change, and spelling the default out is no change.
func TestTheSentinelsChangeWithinTheirRules(t *testing.T) {
	vkc := clusters(t)
	ctx := context.Background()
	created, err := vkc.Create(ctx, object(t, "watched", "topology: Sentinel"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	update := func(sentinel string) error {
		edited := created.DeepCopy()
		if err := unstructured.SetNestedField(edited.Object, parseYAML(t, sentinel), "spec", "sentinel"); err != nil {
			t.Fatal(err)
		}
		_, err := vkc.Update(ctx, edited, metav1.UpdateOptions{})
		return err
	}
	check(t, update("{replicas: 4}"), "sentinel.replicas must be odd")
	check(t, update("{replicas: 5, quorum: 3}"), "")
	created, err = vkc.Get(ctx, "watched", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, update("{replicas: 3, downAfter: 8s, storage: {size: 64Mi}}"), "")
	created, err = vkc.Get(ctx, "watched", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, update("{replicas: 3, storage: {size: 128Mi}}"), "sentinel.storage.size is immutable once set")
	edited := created.DeepCopy()
	if err := unstructured.SetNestedField(edited.Object, false, "spec", "auth", "enabled"); err != nil {
		t.Fatal(err)
	}
	_, err = vkc.Update(ctx, edited, metav1.UpdateOptions{})
	check(t, err, "auth.enabled cannot change in the Sentinel topology yet")
}
