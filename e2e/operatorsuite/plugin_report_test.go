package operatorsuite

import (
	"archive/tar"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestKubectlValkeyReport builds a report of a real cluster whose secrets reach places a report
// collects (CONFIG GET shows masterauth in clear; an Event quotes the application password and
// a ValkeyACL user's, as a careless controller might) and one of whose pods restarted: every
// part is in the archive, a part that cannot be collected (the journal, whose API is not
// installed here) is noted without failing the report, and no value of any Secret of the
// namespace is anywhere in it, in clear or base64.
func TestKubectlValkeyReport(t *testing.T) {
	ns, ctx, vc := steadyReplication(t, "rep", 3*time.Minute)
	const aclPassword = "reporter-secret-Xy7"
	if err := k.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reporter-pw"}, StringData: map[string]string{"password": aclPassword}}); err != nil {
		t.Fatal(err)
	}
	if err := k.Create(ctx, &v1alpha1.ValkeyACL{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reporter"}, Spec: v1alpha1.ValkeyACLSpec{
		Cluster: "rep", User: "reporter", Rules: []v1alpha1.ACLRule{"~app:*", "+get"}, PasswordSecrets: []v1alpha1.SecretKeyRef{{Name: "reporter-pw"}},
	}}); err != nil {
		t.Fatal(err)
	}
	leak := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: "rep.leak"},
		InvolvedObject: corev1.ObjectReference{Kind: "ValkeyCluster", APIVersion: v1alpha1.SchemeGroupVersion.String(), Namespace: ns, Name: "rep", UID: vc.UID},
		Reason:         "Careless", Type: corev1.EventTypeWarning, Count: 1,
		Message:        "connected with password " + password(t, vc) + " and user reporter/" + aclPassword,
		FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Source: corev1.EventSource{Component: "careless-controller"},
	}
	if err := k.Create(ctx, leak); err != nil {
		t.Fatal(err)
	}
	// A replica restarts: its log before the restart is the previous log.
	restarted := ""
	for _, n := range vc.Status.Nodes {
		if n.Role == v1alpha1.NodeRoleReplica {
			restarted = n.Pod
		}
	}
	if err := cl.KillContainer(ns, restarted, "valkey"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		var pod corev1.Pod
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: restarted}, &pod); err == nil && len(pod.Status.ContainerStatuses) == 1 &&
			pod.Status.ContainerStatuses[0].RestartCount > 0 && pod.Status.ContainerStatuses[0].Ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not restart and become ready", restarted)
		}
	}
	vc = waitFor(t, ns, "rep", 2*time.Minute, "Steady with 3 ready after the restart", steadyWith(3))

	archive := filepath.Join(t.TempDir(), "rep.tar.gz")
	out, errOut, err := pluginIn(t, pluginBinary(t), "", "report", ns, "rep", "--archive", archive)
	if err != nil {
		t.Fatalf("kubectl valkey report: %v\n%s%s", err, out, errOut)
	}
	t.Logf("kubectl valkey report says:\n%s%s", out, errOut)
	files := readArchive(t, archive)

	// Every value of every Secret of the namespace, and its base64 forms.
	var secrets corev1.SecretList
	if err := k.List(ctx, &secrets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, s := range secrets.Items {
		for key, v := range s.Data {
			if len(v) < 6 {
				t.Fatalf("Secret %s key %s is too short to be looked for: %q", s.Name, key, v)
			}
			values = append(values, string(v), base64.StdEncoding.EncodeToString(v), base64.RawStdEncoding.EncodeToString(v))
		}
	}
	if len(values) < 3*5 { // the auth Secret's four keys and the ValkeyACL user's
		t.Fatalf("only %d Secret values to look for", len(values)/3)
	}
	noSecret := func(where, content string) {
		for _, v := range values {
			if strings.Contains(content, v) {
				t.Errorf("%s holds a Secret's value %.6s...", where, v)
			}
		}
	}
	for name, content := range files {
		noSecret(name, content)
	}
	noSecret("what kubectl valkey report printed", out+errOut)
	if fi, err := os.Stat(archive); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the archive's mode: %v %v, want 0600 (it holds logs)", fi.Mode(), err)
	}

	dir := ""
	for name := range files {
		dir, _, _ = strings.Cut(name, "/")
		break
	}
	file := func(name string) string {
		t.Helper()
		content, ok := files[dir+"/"+name]
		if !ok {
			t.Errorf("the archive lacks %s", name)
		}
		return content
	}
	for name, want := range map[string]string{
		"cluster.yaml": "state: Steady", "history.txt": "bootstrap-complete", "events.txt": "[REDACTED]",
		"summary.txt": "not collected",
	} {
		if c := file(name); !strings.Contains(c, want) {
			t.Errorf("%s lacks %q:\n%s", name, want, c)
		}
	}
	if c := file("events.txt"); !strings.Contains(c, "user reporter/[REDACTED]") {
		t.Errorf("events.txt does not show the Event with the passwords redacted:\n%s", c)
	}
	// No journal API in this cluster: noted, not fatal.
	if c := file("journal.txt.error"); !strings.Contains(c, "journal") {
		t.Errorf("journal.txt.error: %q", c)
	}
	if c := file("summary.txt"); !strings.Contains(c, "missing journal.txt") {
		t.Errorf("the summary does not say the journal is missing:\n%s", c)
	}
	if !strings.Contains(out, "missing journal.txt") || !strings.Contains(out, "ok      nodes/") {
		t.Errorf("the printed summary does not say what was and was not collected:\n%s", out)
	}
	for _, n := range vc.Status.Nodes {
		if c := file("pods/" + n.Pod + ".yaml"); !strings.Contains(c, "podIP: "+n.IP) {
			t.Errorf("pods/%s.yaml lacks its IP", n.Pod)
		}
		if c := file("logs/" + n.Pod + "/valkey.log"); !strings.Contains(c, "Ready to accept connections") {
			t.Errorf("logs/%s/valkey.log is not the server's log:\n%.500s", n.Pod, c)
		}
		if c := file("nodes/" + n.Pod + "/info.txt"); !strings.Contains(c, "# Replication") || !strings.Contains(c, "run_id:") {
			t.Errorf("nodes/%s/info.txt is not INFO:\n%.500s", n.Pod, c)
		}
		if c := file("nodes/" + n.Pod + "/role.txt"); !strings.Contains(c, map[v1alpha1.NodeRole]string{v1alpha1.NodeRolePrimary: "master", v1alpha1.NodeRoleReplica: "slave"}[n.Role]) {
			t.Errorf("nodes/%s/role.txt: %q (the node is %s)", n.Pod, c, n.Role)
		}
		c := file("nodes/" + n.Pod + "/config.txt")
		for _, want := range []string{"\nmasterauth [REDACTED]\n", "\nmasteruser replication\n", "\nmaxmemory-policy "} {
			if !strings.Contains(c, want) {
				t.Errorf("nodes/%s/config.txt lacks %q:\n%.800s", n.Pod, want, c)
			}
		}
	}
	if c := file("logs/" + restarted + "/valkey.previous.log"); !strings.Contains(c, "Ready to accept connections") {
		t.Errorf("the restarted pod's previous log:\n%.500s", c)
	}
	for name := range files {
		if strings.HasSuffix(name, ".error") && !strings.HasSuffix(name, "/journal.txt.error") {
			t.Errorf("%s could not be collected: %s", name, files[name])
		}
	}
}

// readArchive returns every file of a .tar.gz by name.
func readArchive(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = string(b)
	}
}
