package main

import (
	"context"
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/golden"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// shardsStatus is the status of a Steady Cluster whose shards serve slots.
func shardsStatus(state v1beta1.State, slots ...string) v1beta1.ValkeyClusterStatus {
	st := v1beta1.ValkeyClusterStatus{State: state, ObservedGeneration: 1, ShardCount: int32(len(slots))}
	for i, s := range slots {
		st.Shards = append(st.Shards, v1beta1.ShardStatus{Index: int32(i), Primary: "sessions-s" + string(rune('0'+i)) + "-0", Slots: s})
	}
	return st
}

func specShards(t *testing.T, ns, name string) int32 {
	t.Helper()
	u, err := kube.GetCluster(context.Background(), shared.dyn, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := kube.Typed(u)
	if err != nil {
		t.Fatal(err)
	}
	return vc.Spec.Shards
}

// reshard shows the machine's plan from the slots in status, changes spec.shards only with
// --shards (not with --dry-run), and says what the operator is doing about it.
func TestReshardAgainstAPIServer(t *testing.T) {
	ns := namespace(t, "reshard")
	createClusterWith(t, ns, "sessions", v1beta1.ValkeyClusterSpec{Topology: v1beta1.TopologyCluster, Shards: 3})
	writeStatus(t, ns, "sessions", shardsStatus(v1beta1.StateSteady, "0-5460", "5461-10921", "10922-16383"))

	out, err := kubectlValkey(t, "reshard", "sessions", "-n", ns)
	if err != nil || out != "Slots balanced over 3 shards: nothing to move.\n" {
		t.Fatalf("reshard of a balanced cluster: %v\n%s", err, out)
	}

	out, err = kubectlValkey(t, "reshard", "sessions", "-n", ns, "--shards", "4", "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "reshard-plan.txt", []byte(out))
	// 3 → 4 moves a quarter of the slots, one range from each shard, into shard 3.
	for _, want := range []string{"4096 of 16384 slots move", "shard 0   shard 3   4096-5460"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q", want)
		}
	}
	if got := specShards(t, ns, "sessions"); got != 3 {
		t.Fatalf("--dry-run changed spec.shards to %d", got)
	}

	out, err = kubectlValkey(t, "reshard", "sessions", "-n", ns, "--shards", "4")
	if err != nil || !strings.Contains(out, "spec.shards of sessions set to 4 (was 3)") {
		t.Fatalf("reshard --shards 4: %v\n%s", err, out)
	}
	if got := specShards(t, ns, "sessions"); got != 4 {
		t.Fatalf("spec.shards is %d after --shards 4", got)
	}

	// The operator is on it: the plan left, the progress and what it waits for.
	st := shardsStatus(v1beta1.StateResharding, "0-4095", "5461-10921", "10922-16383", "4096-5460")
	st.Progress, st.Waiting = "resharding to 4 shards: 2731 slots left to move", "shard 3: sessions-s3-1 not joined"
	writeStatus(t, ns, "sessions", st)
	out, err = kubectlValkey(t, "reshard", "sessions", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Plan over 4 shards: 2731 of 16384 slots still move", "Resharding now: resharding to 4 shards: 2731 slots left to move", "Waiting: shard 3: sessions-s3-1 not joined"} {
		if !strings.Contains(out, want) {
			t.Errorf("reshard during a resharding lacks %q:\n%s", want, out)
		}
	}

	// Bad input: a clear error, nothing changed.
	if _, err := kubectlValkey(t, "reshard", "sessions", "-n", ns, "--shards", "0"); err == nil || !strings.Contains(err.Error(), "at least 1 shard") {
		t.Errorf("--shards 0: %v", err)
	}
	if _, err := kubectlValkey(t, "reshard", "sessions", "-n", ns, "--shards", "500"); err == nil || !strings.Contains(err.Error(), "spec.shards") {
		t.Errorf("--shards 500 was not refused by the API server: %v", err)
	}
	if got := specShards(t, ns, "sessions"); got != 4 {
		t.Fatalf("spec.shards is %d after refused requests", got)
	}
	if _, err := kubectlValkey(t, "reshard", "sessions", "-n", ns, "--dry-run"); err == nil || !strings.Contains(err.Error(), "--dry-run goes with --shards") {
		t.Errorf("--dry-run without --shards: %v", err)
	}
	st = shardsStatus(v1beta1.StateFailingOver, "0-4095", "", "10922-16383", "4096-5460")
	writeStatus(t, ns, "sessions", st)
	if out, err := kubectlValkey(t, "reshard", "sessions", "-n", ns); err != nil || !strings.Contains(out, "Warning: shard 1's slots are unknown") {
		t.Errorf("a shard whose primary does not answer: %v\n%s", err, out)
	}
	createCluster(t, ns, "cache")
	if _, err := kubectlValkey(t, "reshard", "cache", "-n", ns); err == nil || !strings.Contains(err.Error(), "only topology Cluster has shards") {
		t.Errorf("reshard of a Replication cluster: %v", err)
	}
	if _, err := kubectlValkey(t, "reshard", "nope", "-n", ns); err == nil || err.Error() != "ValkeyCluster reshard/nope not found" {
		t.Errorf("reshard of a missing cluster: %v", err)
	}
}
