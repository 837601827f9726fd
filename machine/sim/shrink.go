package sim

// Shrink minimises a failing schedule: it removes chunks of steps, halving the chunk size
// when nothing can be removed (delta debugging), as long as fails still holds, within
// maxRuns runs of the simulation. The result is a schedule a person can read.
func Shrink(t Topology, schedule []Step, opts Options, fails func(Result) bool, maxRuns int) []Step {
	runs := 0
	try := func(cand []Step) bool {
		runs++
		return fails(Run(t, cand, opts))
	}
	s := append([]Step(nil), schedule...)
	chunks := 2
	for len(s) > 0 && runs < maxRuns {
		size := (len(s) + chunks - 1) / chunks
		removed := false
		for start := 0; start < len(s) && runs < maxRuns; start += size {
			end := min(start+size, len(s))
			cand := append(append([]Step(nil), s[:start]...), s[end:]...)
			if try(cand) {
				s = cand
				chunks = max(chunks-1, 2)
				removed = true
				break
			}
		}
		if removed {
			continue
		}
		if size == 1 {
			break
		}
		chunks = min(chunks*2, len(s))
	}
	return s
}
