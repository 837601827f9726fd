package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// parseOutputs reads `go test -bench` outputs: for each benchmark (its name without
// sub-benchmarks and the GOMAXPROCS suffix) the values of each metric over its runs, and the
// machine as the outputs' cpu line and this machine's cores and memory describe it.
func parseOutputs(paths []string) (map[string]map[string][]float64, string, error) {
	runs := map[string]map[string][]float64{}
	cpu := ""
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return nil, "", err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 1 && fields[0] == "cpu:" {
				cpu = strings.Join(fields[1:], " ")
			}
			if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
				continue
			}
			if _, err := strconv.Atoi(fields[1]); err != nil {
				continue // a log line that starts with a benchmark's name
			}
			// A figure names the top benchmark, or one sub-benchmark when the subs measure
			// different things (BenchmarkExplore/topology=all: one topology's speed).
			names := []string{benchName(fields[0])}
			if sub := withoutProcs(fields[0]); sub != names[0] {
				names = append(names, sub)
			}
			for _, name := range names {
				if runs[name] == nil {
					runs[name] = map[string][]float64{}
				}
			}
			for i := 2; i+1 < len(fields); i += 2 {
				v, err := strconv.ParseFloat(fields[i], 64)
				if err != nil {
					return nil, "", fmt.Errorf("%s: %q: %v", path, sc.Text(), err)
				}
				for _, name := range names {
					runs[name][fields[i+1]] = append(runs[name][fields[i+1]], v)
				}
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, "", err
		}
	}
	return runs, describeMachine(cpu), nil
}

// benchName drops the sub-benchmark and the -GOMAXPROCS suffix: the top benchmark.
func benchName(s string) string {
	if i := strings.IndexByte(s, '/'); i > 0 {
		s = s[:i]
	}
	return withoutProcs(s)
}

// withoutProcs drops the -GOMAXPROCS suffix.
func withoutProcs(s string) string {
	if i := strings.LastIndexByte(s, '-'); i > 0 {
		if _, err := strconv.Atoi(s[i+1:]); err == nil {
			s = s[:i]
		}
	}
	return s
}

// describeMachine is "N cores, M GiB" and the CPU model when the output names it.
func describeMachine(cpu string) string {
	out := fmt.Sprintf("%d cores", runtime.NumCPU())
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
					out += fmt.Sprintf(", %.0f GiB", kb/(1<<20))
				}
			}
		}
	}
	if cpu != "" {
		out += ", " + cpu
	}
	return out
}
