package operatorsuite

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// processCPU is the CPU time (user and system, in clock ticks) that the live processes of each
// command name have used, summed by name: where a benchmark's busy machine spends its cores.
// A process that exits within the window takes its time with it (undercounted, never
// overcounted).
func processCPU() map[string]float64 {
	out := map[string]float64{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// comm is in parentheses and may hold spaces; the fields after it are fixed.
		s := string(data)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 13 {
			continue
		}
		utime, _ := strconv.ParseFloat(f[11], 64)
		stime, _ := strconv.ParseFloat(f[12], 64)
		out[s[open+1:end]] += utime + stime
	}
	return out
}

// cpuShares says which command names used the CPU time between before and after, largest
// first, as shares of all of it; names under 2 % are summed as "other". The test process
// itself (operator, harness, clients) is named by its binary.
func cpuShares(before, after map[string]float64) (string, map[string]float64) {
	used := map[string]float64{}
	var total float64
	for name, t := range after {
		if d := t - before[name]; d > 0 {
			used[name] = d
			total += d
		}
	}
	if total == 0 {
		return "no CPU time recorded", nil
	}
	names := make([]string, 0, len(used))
	for name := range used {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return used[names[i]] > used[names[j]] })
	shares := map[string]float64{}
	var parts []string
	var other float64
	for _, name := range names {
		share := used[name] / total
		shares[name] = share
		if share < 0.02 {
			other += share
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.0f%%", name, share*100))
	}
	if other > 0 {
		parts = append(parts, fmt.Sprintf("other %.0f%%", other*100))
	}
	return strings.Join(parts, ", "), shares
}

// selfComm is this process's command name as /proc shows it (the kernel keeps 15 bytes).
func selfComm() string {
	name := filepath.Base(os.Args[0])
	return name[:min(len(name), 15)]
}
