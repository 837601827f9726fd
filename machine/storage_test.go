package machine

import "testing"

func TestSmallerVolumesAreGrownInEveryState(t *testing.T) {
	spec := testSpec(2)
	spec.StorageBytes = 2 << 30
	big, small := primary(10), replica(1, 10)
	big.Pod.VolumeBytes, small.Pod.VolumeBytes = 2<<30, 1<<30
	r2 := replica(2, 10) // no claim reported: nothing to grow
	for _, p := range []Persisted{steadyState(), {State: FailingOver, Seq: 1, Since: at(0), Shards: steadyState().Shards, Op: Operation{Election: Election{Lost: "s0-0"}}}} {
		d := Decide(p, obsAt(1, spec, big, small, r2))
		got := actionsOf(d, "expand-volumes")
		if len(got) != 1 || got[0] != "expand-volumes [s0-1] to 2147483648 bytes" {
			t.Fatalf("%s: expand actions %v", p.State, got)
		}
		if last := d.Actions[len(d.Actions)-1]; last.Kind() != "expand-volumes" {
			t.Fatalf("%s: growing volumes must come last, after %v", p.State, d.Actions)
		}
	}
	small.Pod.VolumeBytes = 2 << 30
	if got := actionsOf(Decide(steadyState(), obsAt(1, spec, big, small, r2)), "expand-volumes"); len(got) != 0 {
		t.Fatalf("grows volumes that are large enough: %v", got)
	}
}
