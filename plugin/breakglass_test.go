package main

import (
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/confirm"
)

// onTerminal runs a verb with a terminal as its stdin, typing typed once it asks.
func onTerminal(t *testing.T, typed string, args ...string) (string, error) {
	t.Helper()
	ptm, pts := openPTY(t)
	// The terminal echoes what is typed: read it away so that it never fills up.
	go func() { _, _ = io.Copy(io.Discard, ptm) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root := newRootCommand(clock)
	root.SetArgs(append(args, "--kubeconfig", shared.kubeconfig))
	var stdout, stderr syncBuffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetIn(pts)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	eventually(t, "the verb asks", func() bool { return strings.Contains(stdout.String(), "Type the cluster's name") })
	if _, err := ptm.WriteString(typed + "\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		return stdout.String(), err
	case <-ctx.Done():
		t.Fatalf("%v did not end after the answer", args)
		return "", nil
	}
}

// bootstrappingStatus is a Replication cluster waiting in Bootstrapping for the user to name
// the pod whose data wins.
func bootstrappingStatus() v1beta1.ValkeyClusterStatus {
	return v1beta1.ValkeyClusterStatus{
		State:   v1beta1.StateBootstrapping,
		Waiting: "shard 0: cache-2 kept a volume from before this cluster and do(es) not answer yet: it may hold the newest data (to go on without it, name the pod whose data wins in the annotation valkey.fsm.dev/bootstrap-from)",
		Nodes: []v1beta1.NodeStatus{
			{Pod: "cache-0", Role: v1beta1.NodeRolePrimary, ReplicationOffset: 5120},
			{Pod: "cache-1", Role: v1beta1.NodeRolePrimary, ReplicationOffset: 9812},
		},
	}
}

// force-bootstrap shows whose data is discarded, writes the annotation only once the cluster's
// name is typed on a terminal (or with --yes), refuses without a terminal, and refuses a pod
// that is not the cluster's and a cluster that is not bootstrapping.
func TestForceBootstrapShowsAndAsks(t *testing.T) {
	ns := namespace(t, "force-bootstrap")
	createCluster(t, ns, "cache")
	writeStatus(t, ns, "cache", bootstrappingStatus())
	key := v1beta1.AnnotationBootstrapFrom

	out, err := kubectlValkey(t, "force-bootstrap", "cache", "-n", ns, "--from", "cache-1")
	if !errors.Is(err, confirm.ErrNoTerminal) {
		t.Errorf("without a terminal nor --yes: %v, want a refusal", err)
	}
	for _, want := range []string{
		"Bootstrap force-bootstrap/cache from cache-1 (annotation valkey.fsm.dev/bootstrap-from=cache-1)",
		"State:        Bootstrapping",
		"Waiting for:  shard 0: cache-2 kept a volume",
		"cache-1's data becomes shard 0's",
		"data is DISCARDED",
		"cache-0 Primary 0 5120 false",
	} {
		if !strings.Contains(squash(out), squash(want)) {
			t.Errorf("the plan lacks %q:\n%s", want, out)
		}
	}
	if regexp.MustCompile(`(?m)^\s+cache-1\s`).MatchString(out) {
		t.Errorf("the plan lists the pod whose data is kept among the discarded:\n%s", out)
	}
	if v := annotation(t, ns, "cache", key); v != "" {
		t.Fatalf("refused, yet %s=%s", key, v)
	}

	if _, err := kubectlValkey(t, "force-bootstrap", "cache", "-n", ns, "--from", "cache-1", "--dry-run"); err != nil || annotation(t, ns, "cache", key) != "" {
		t.Errorf("--dry-run: %v, annotation %q", err, annotation(t, ns, "cache", key))
	}
	if _, err := kubectlValkey(t, "force-bootstrap", "cache", "-n", ns, "--from", "other-0", "--yes"); err == nil || !strings.Contains(err.Error(), "other-0 is not a pod of force-bootstrap/cache") {
		t.Errorf("a pod of another cluster: %v", err)
	}

	out, err = onTerminal(t, "cash", "force-bootstrap", "cache", "-n", ns, "--from", "cache-1")
	if err == nil || !strings.Contains(err.Error(), `not confirmed (typed "cash", not "cache")`) || annotation(t, ns, "cache", key) != "" {
		t.Errorf("a mistyped name: %v, annotation %q\n%s", err, annotation(t, ns, "cache", key), out)
	}
	out, err = onTerminal(t, "cache", "force-bootstrap", "cache", "-n", ns, "--from", "cache-1")
	if err != nil || annotation(t, ns, "cache", key) != "cache-1" || !strings.Contains(out, "bootstrap of cache from cache-1 requested") {
		t.Errorf("the name typed: %v, annotation %q\n%s", err, annotation(t, ns, "cache", key), out)
	}

	createCluster(t, ns, "steady")
	writeStatus(t, ns, "steady", statusAfter(lifeOf))
	if _, err := kubectlValkey(t, "force-bootstrap", "steady", "-n", ns, "--from", "cache-1", "--yes"); err == nil || !strings.Contains(err.Error(), "force-bootstrap/steady is Steady: the operator reads valkey.fsm.dev/bootstrap-from only while a cluster bootstraps") {
		t.Errorf("a Steady cluster: %v", err)
	}
	if v := annotation(t, ns, "steady", key); v != "" {
		t.Errorf("a Steady cluster refused, yet %s=%s", key, v)
	}
}

// force-failover shows the pods given up and what is lost, writes the annotation with --yes,
// refuses without a terminal, and refuses naming a stranger or every pod.
func TestForceFailoverShowsAndAsks(t *testing.T) {
	ns := namespace(t, "force-failover")
	createCluster(t, ns, "cache")
	st := statusAfter(lifeOf)
	st.Waiting = "shard 0: primary cache-0 unreachable; no failover: 2 node(s) of shard 0 unseen (cache-0, cache-2), at most 0 allowed: they may hold writes acknowledged with WAIT 1 that no node seen holds. Bring them back (their node, their pods), or, to fail over without them and give up the writes only they hold, name them in the annotation valkey.fsm.dev/failover-without"
	writeStatus(t, ns, "cache", st)
	key := v1beta1.AnnotationFailoverWithout

	out, err := kubectlValkey(t, "force-failover", "cache", "-n", ns, "--without", "cache-2")
	if !errors.Is(err, confirm.ErrNoTerminal) || annotation(t, ns, "cache", key) != "" {
		t.Errorf("without a terminal nor --yes: %v, annotation %q", err, annotation(t, ns, "cache", key))
	}
	for _, want := range []string{
		"Fail over force-failover/cache without cache-2 (annotation valkey.fsm.dev/failover-without=cache-2)",
		"Primary:      cache-0 (as last recorded)",
		"Writes acknowledged with WAIT that only these pods hold are LOST",
		"cache-2 Replica 0 9812003 true",
	} {
		if !strings.Contains(squash(out), squash(want)) {
			t.Errorf("the plan lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Note: status.waiting does not say") {
		t.Errorf("the plan doubts a wait status names:\n%s", out)
	}
	if _, err := kubectlValkey(t, "force-failover", "cache", "-n", ns, "--without", "cache-0,cache-1,cache-2", "--yes"); err == nil || !strings.Contains(err.Error(), "names every pod") {
		t.Errorf("every pod named: %v", err)
	}
	if _, err := kubectlValkey(t, "force-failover", "cache", "-n", ns, "--without", "cache-9", "--yes"); err == nil || !strings.Contains(err.Error(), "cache-9 is not a pod of force-failover/cache") {
		t.Errorf("a stranger named: %v", err)
	}
	out, err = kubectlValkey(t, "force-failover", "cache", "-n", ns, "--without", "cache-0", "--without", "cache-2", "--yes")
	if err != nil || annotation(t, ns, "cache", key) != "cache-0,cache-2" || !strings.Contains(out, "failover of cache without cache-0,cache-2 requested") {
		t.Errorf("--yes: %v, annotation %q\n%s", err, annotation(t, ns, "cache", key), out)
	}

	// Without a wait for unseen pods, the plan says what the annotation then does.
	st.Waiting = ""
	writeStatus(t, ns, "cache", st)
	out, _ = kubectlValkey(t, "force-failover", "cache", "-n", ns, "--without", "cache-2", "--dry-run")
	if !strings.Contains(out, "Note: status.waiting does not say that a failover waits for unseen pods") || !strings.Contains(squash(out), "Replaces: valkey.fsm.dev/failover-without=cache-0,cache-2") {
		t.Errorf("the plan without a wait:\n%s", out)
	}
}

// squash is s with every run of blanks one space: tables align with as many as they need.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }
