package machine

import (
	"strings"
	"testing"
)

// A re-created cluster's bootstrap over nodes restarted from their append-only files (no place
// in a history): each branch of what their key counts and data digests decide.

// restartedWithDigest is restarted with a data digest.
func restartedWithDigest(ord int, keys int64, digest string) Node {
	n := restarted(ord, keys)
	n.Valkey.Digest = digest
	return n
}

func TestBootstrapOfEqualDigestsSaysTheDataIsTheSame(t *testing.T) {
	d := Decide(Persisted{}, obsAt(1, durableSpec(1), restartedWithDigest(0, 5, "scan:5:aa"), restartedWithDigest(1, 5, "scan:5:aa")))
	if d.Transition == nil || d.Transition.Event != EventBootstrapElected {
		t.Fatalf("no election between nodes with the same data: %+v waiting=%q", d.Transition, d.Waiting)
	}
	if why := d.Transition.Why; why.Kind != ReasonBootstrapElected || why.Node != "s0-0" || why.Same != "s0-1" || why.OverByKeys != "" {
		t.Fatalf("reason %+v does not say the data is the same, or says key counts chose", why)
	}
}

func TestBootstrapOfEqualCountsAndDifferentDigestsWaits(t *testing.T) {
	empty := node(2, RoleReplica, "fresh-2", 0)
	obs := obsAt(1, durableSpec(2), restartedWithDigest(0, 5, "scan:5:aa"), restartedWithDigest(1, 5, "scan:5:bb"), empty)
	d := Decide(Persisted{}, obs)
	if d.Transition != nil || len(actionsOf(d, "promote")) > 0 || len(actionsOf(d, "replica-of")) > 0 {
		t.Fatalf("chose between different data of as many keys: %+v %v", d.Transition, d.Actions)
	}
	for _, want := range []string{"s0-0 5 keys, s0-1 5 keys hold as many keys each but different data", "valkey.fsm.dev/bootstrap-from"} {
		if d.Waiting.Kind != WaitDataChoice || !strings.Contains(d.Waiting.Detail, want) {
			t.Errorf("waiting %q lacks %q", d.Waiting, want)
		}
	}
	// A node with more keys than both is elected by key count: it is not the tie.
	obs = obsAt(2, durableSpec(2), restartedWithDigest(0, 5, "scan:5:aa"), restartedWithDigest(1, 5, "scan:5:bb"), restartedWithDigest(2, 7, "scan:7:cc"))
	d = Decide(Persisted{}, obs)
	if d.Transition == nil || d.Next.Shards[0].Primary != "s0-2" || d.Transition.Why.OverByKeys != "s0-0,s0-1" {
		t.Fatalf("want s0-2 (7 keys) elected by key count over the tie: %+v waiting=%q", d.Transition, d.Waiting)
	}
	// The user's choice ends the wait, with what it discards.
	spec := durableSpec(2)
	spec.BootstrapFrom = "s0-1"
	d = Decide(Persisted{}, obsAt(3, spec, restartedWithDigest(0, 5, "scan:5:aa"), restartedWithDigest(1, 5, "scan:5:bb"), empty))
	if d.Transition == nil || d.Next.Shards[0].Primary != "s0-1" || d.Transition.Why != (Reason{Kind: ReasonBootstrapChosen, Node: "s0-1", Keys: 5, Others: "s0-0 5 keys"}) {
		t.Fatalf("the user's choice was not recorded: %+v", d.Transition)
	}
}

func TestBootstrapOfDifferentCountsAndDigestsGoesByKeyCount(t *testing.T) {
	d := Decide(Persisted{}, obsAt(1, durableSpec(1), restartedWithDigest(0, 5, "scan:5:aa"), restartedWithDigest(1, 6, "scan:6:bb")))
	if d.Transition == nil || d.Next.Shards[0].Primary != "s0-1" || d.Transition.Why.OverByKeys != "s0-0" {
		t.Fatalf("want s0-1 (6 keys) elected by key count: %+v waiting=%q", d.Transition, d.Waiting)
	}
}

func TestBootstrapWithoutComparableDigestsGoesByKeyCount(t *testing.T) {
	for name, digests := range map[string][2]string{
		"one unknown":           {"scan:5:aa", ""},
		"both unknown":          {"", ""},
		"of different kinds":    {"scan:5:aa", "debug:bb"},
		"equal but of no kind":  {"aa", "aa"},
		"differ but of no kind": {"aa", "bb"},
	} {
		d := Decide(Persisted{}, obsAt(1, durableSpec(1), restartedWithDigest(0, 5, digests[0]), restartedWithDigest(1, 5, digests[1])))
		if d.Transition == nil || d.Next.Shards[0].Primary != "s0-0" {
			t.Errorf("%s: want s0-0 elected by key count as before digests: %+v waiting=%q", name, d.Transition, d.Waiting)
			continue
		}
		if why := d.Transition.Why; why.OverByKeys != "s0-1" || why.Same != "" {
			t.Errorf("%s: reason %+v does not say key counts chose", name, why)
		}
	}
}
