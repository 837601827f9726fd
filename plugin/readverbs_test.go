package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/certificate"
	"github.com/valkey-fsm/valkey-operator/plugin/report"
	"github.com/valkey-fsm/valkey-operator/plugin/reshard"
	"github.com/valkey-fsm/valkey-operator/plugin/version"
)

// decode reads one document of -o json or -o yaml into v, refusing a field v does not have:
// the structure printed is the documented one, not whatever the verb happened to encode.
func decode(t *testing.T, format, out string, v any) {
	t.Helper()
	data := []byte(out)
	if format == "yaml" {
		var err error
		if data, err = yaml.YAMLToJSON(data); err != nil {
			t.Fatalf("-o yaml is not YAML: %v\n%s", err, out)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("-o %s is not a %T: %v\n%s", format, v, err, out)
	}
}

// shopStatus is a three-shard cluster whose third primary does not answer as one, with TLS.
func shopStatus() v1beta1.ValkeyClusterStatus {
	st := statusAfter(lifeOf)
	st.Shards = []v1beta1.ShardStatus{{Index: 0, Primary: "shop-0-0", Slots: "0-10000"}, {Index: 1, Primary: "shop-1-0", Slots: "10001-16383"}, {Index: 2, Primary: "shop-2-0"}}
	st.TLS = &v1beta1.TLSStatus{
		Secret: &v1beta1.CertificateInfo{Subject: "CN=*.shop-nodes.read-verbs.svc", Serial: "3", NotAfter: ptrTime(at(48 * time.Hour))},
		Nodes:  []v1beta1.NodeCertificate{{Pod: "shop-0-0", CertificateInfo: v1beta1.CertificateInfo{Serial: "3"}, MatchesSecret: true}, {Pod: "shop-1-0", Error: "connection refused"}},
	}
	return st
}

func ptrTime(t metav1.Time) *metav1.Time { return &t }

// Every verb that reads prints, with -o json and -o yaml, one document of its documented
// structure, from what a real API server holds.
func TestEveryReadingVerbPrintsItsStructure(t *testing.T) {
	ns := namespace(t, "read-verbs")
	createClusterWith(t, ns, "shop", v1beta1.ValkeyClusterSpec{Topology: v1beta1.TopologyCluster, Shards: 3,
		TLS: v1beta1.TLSSpec{Mode: v1beta1.TLSOnly, SecretRef: &v1beta1.SecretRef{Name: "shop-certs"}}})
	writeStatus(t, ns, "shop", shopStatus())
	operator := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "valkey-operator", Namespace: ns, Labels: map[string]string{"app.kubernetes.io/name": "valkey-operator"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "op"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "op"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "operator", Image: "ghcr.io/valkey-fsm/valkey-operator:v9.9.9"}}},
			},
		},
	}
	if _, err := shared.core.AppsV1().Deployments(ns).Create(context.Background(), operator, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := kubectlValkey(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out
	}

	for _, format := range []string{"json", "yaml"} {
		var st v1beta1.ValkeyClusterStatus
		decode(t, format, run("status", "shop", "-n", ns, "-o", format), &st)
		if st.State != v1beta1.StateSteady || len(st.Shards) != 3 {
			t.Errorf("status -o %s: %+v", format, st)
		}

		var entries []v1beta1.HistoryEntry
		decode(t, format, run("history", "shop", "-n", ns, "-o", format), &entries)
		if len(entries) != len(lifeOf) || entries[0].Seq != 1 {
			t.Errorf("history -o %s: %+v", format, entries)
		}

		var plan reshard.View
		decode(t, format, run("reshard", "shop", "-n", ns, "-o", format), &plan)
		sum := 0
		for _, m := range plan.Moves {
			sum += m.Count
			if m.Count != m.End-m.Start+1 {
				t.Errorf("reshard -o %s: move %+v counts wrong", format, m)
			}
		}
		if plan.Cluster != ns+"/shop" || plan.FromShards != 3 || plan.ToShards != 3 || plan.SlotsMoving == 0 || sum != plan.SlotsMoving ||
			!slices.Equal(plan.UnknownSlots, []int32{2}) || plan.SpecShardsSet || plan.State != v1beta1.StateSteady {
			t.Errorf("reshard -o %s: %+v", format, plan)
		}
		decode(t, format, run("reshard", "shop", "-n", ns, "--shards", "4", "--dry-run", "-o", format), &plan)
		if plan.ToShards != 4 || plan.SpecShardsSet {
			t.Errorf("reshard --shards 4 --dry-run -o %s: %+v", format, plan)
		}

		var cert certificate.View
		decode(t, format, run("certificate", "shop", "-n", ns, "-o", format), &cert)
		if cert.Mode != v1beta1.TLSOnly || cert.SecretName != "shop-certs" || cert.TLS == nil || cert.TLS.Secret.Serial != "3" || len(cert.TLS.Nodes) != 2 || cert.TLS.Nodes[1].Error != "connection refused" {
			t.Errorf("certificate -o %s: %+v", format, cert)
		}

		var v version.View
		decode(t, format, run("version", "-o", format), &v)
		want := version.Operator{Kind: "Deployment", Namespace: ns, Name: "valkey-operator", Image: "ghcr.io/valkey-fsm/valkey-operator:v9.9.9"}
		if v.Client.Version == "" || !slices.Contains(v.Operators, want) || v.OperatorError != "" {
			t.Errorf("version -o %s: %+v", format, v)
		}
		out := run("version", "--client", "-o", format)
		decode(t, format, out, &v)
		if strings.Contains(out, "operators") {
			t.Errorf("version --client -o %s asked the cluster:\n%s", format, out)
		}

		archive := filepath.Join(t.TempDir(), "shop.tar.gz")
		var sum2 report.Summary
		decode(t, format, run("report", "shop", "-n", ns, "--archive", archive, "-o", format), &sum2)
		if sum2.Cluster != ns+"/shop" || sum2.Archive != archive || !slices.Contains(sum2.Collected, "cluster.yaml") || !slices.ContainsFunc(sum2.Missing, func(m report.MissingPart) bool { return m.Part == "journal.txt" && m.Reason != "" }) {
			t.Errorf("report -o %s: %+v", format, sum2)
		}
		if fi, err := os.Stat(archive); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() == 0 {
			t.Errorf("report --archive %s: %v %v", archive, fi, err)
		}
	}

	// -o names the output format on report too; a file there says where the archive goes now.
	_, err := kubectlValkey(t, "report", "shop", "-n", ns, "-o", "shop.tar.gz")
	if err == nil || !strings.Contains(err.Error(), `unknown output format "shop.tar.gz"`) || !strings.Contains(err.Error(), "--archive shop.tar.gz") {
		t.Errorf("report -o FILE: %v", err)
	}
	if _, statErr := os.Stat("shop.tar.gz"); statErr == nil {
		_ = os.Remove("shop.tar.gz")
		t.Error("report -o FILE wrote the archive")
	}
}

// The Valkey user is --valkey-user: kubectl's --user keeps its meaning (the kubeconfig's
// user), and a command typed with the old flag says what to type instead.
func TestValkeyUserIsNotKubectlsUser(t *testing.T) {
	ns := namespace(t, "valkey-user")
	createCluster(t, ns, "cache")

	out, err := kubectlValkey(t, "rotate", "cache", "-n", ns, "--valkey-user", "default")
	if err != nil || !strings.Contains(out, "password rotation of cache (default) requested") {
		t.Fatalf("rotate --valkey-user default: %v\n%s", err, out)
	}
	if v := annotation(t, ns, "cache", v1beta1.AnnotationRotatePasswords); !strings.HasPrefix(v, "default@") {
		t.Errorf("rotate --valkey-user default wrote %q", v)
	}
	for _, args := range [][]string{
		{"rotate", "cache", "-n", ns, "--user", "operator"},
		{"cli", "cache", "-n", ns, "--user", "operator"},
	} {
		_, err := kubectlValkey(t, args...)
		if err == nil || !strings.Contains(err.Error(), "--user is kubectl's") || !strings.Contains(err.Error(), "--valkey-user operator") {
			t.Errorf("%v: %v", args, err)
		}
	}
	// A kubeconfig user of another name is kubectl's --user as in kubectl: client-go's own
	// error, no hint.
	_, err = kubectlValkey(t, "status", "cache", "-n", ns, "--user", "nobody")
	if err == nil || strings.Contains(err.Error(), "valkey-user") {
		t.Errorf("--user nobody: %v", err)
	}
}
