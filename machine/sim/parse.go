package sim

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Schedules are written down one step per line, in the form Step.String prints, so that a
// shrunk failure can be kept as a regression file, read by a person, and played again here
// or by the end-to-end chaos suite. ParseStep is the inverse of Step.String.

// ParseStep reads one step.
func ParseStep(line string) (Step, error) {
	line = strings.TrimSpace(line)
	bad := func() (Step, error) { return Step{}, fmt.Errorf("cannot read step %q", line) }
	switch {
	case line == string(StepOperator):
		return Step{Kind: StepOperator}, nil
	case line == string(StepIdle):
		return Step{Kind: StepIdle}, nil
	case strings.HasPrefix(line, "write"):
		var w Write
		format := "write key %d (from ordinal %d)"
		if strings.HasPrefix(line, "write+WAIT") {
			format, w.Wait = "write+WAIT key %d (from ordinal %d)", true
		}
		if _, err := fmt.Sscanf(line, format, &w.Key, &w.Start); err != nil {
			return bad()
		}
		return Step{Kind: StepWrite, Write: w}, nil
	case strings.HasPrefix(line, "user: "):
		u, err := parseUser(strings.TrimPrefix(line, "user: "))
		if err != nil {
			return bad()
		}
		return Step{Kind: StepUser, User: u}, nil
	case strings.HasPrefix(line, "fault: "):
		f, err := parseFault(strings.TrimPrefix(line, "fault: "))
		if err != nil {
			return bad()
		}
		return Step{Kind: StepFault, Fault: f}, nil
	}
	return bad()
}

func parseUser(s string) (UserAction, error) {
	switch {
	case s == "withdraw switchover":
		return UserAction{Kind: UserSwitchover, Clear: true}, nil
	case strings.HasPrefix(s, "switchover shard 0 to "):
		ref, err := parseRef(strings.TrimPrefix(s, "switchover shard 0 to "))
		return UserAction{Kind: UserSwitchover, To: ref.Ordinal}, err
	case strings.HasPrefix(s, "restore,"):
		for to, suffix := range spoiledRestore {
			if to > 0 && s == "restore"+suffix {
				return UserAction{Kind: UserRestore, To: to}, nil
			}
		}
	case s == "recreate":
		return UserAction{Kind: UserRecreate, To: -1}, nil
	case strings.HasPrefix(s, "recreate losing the claim of "):
		ref, err := parseRef(strings.TrimPrefix(s, "recreate losing the claim of "))
		return UserAction{Kind: UserRecreate, To: ref.Ordinal}, err
	case strings.HasPrefix(s, "sentinels to "):
		var n int
		_, err := fmt.Sscanf(s, "sentinels to %d", &n)
		return UserAction{Kind: UserScaleSentinels, To: n}, err
	case strings.HasPrefix(s, "reshard to "):
		var n int
		_, err := fmt.Sscanf(s, "reshard to %d shards", &n)
		return UserAction{Kind: UserReshard, Shards: n}, err
	}
	for _, k := range UserActionKinds {
		if s == string(k) && k != UserSwitchover && k != UserReshard && k != UserRecreate && k != UserScaleSentinels {
			return UserAction{Kind: k}, nil
		}
	}
	return UserAction{}, fmt.Errorf("unknown user action %q", s)
}

func parseFault(s string) (Fault, error) {
	switch {
	case s == string(FaultHeal), s == string(FaultScaleStatefulSet):
		return Fault{Kind: FaultKind(s)}, nil
	case strings.HasPrefix(s, string(FaultOperatorCrash)):
		f := Fault{Kind: FaultOperatorCrash}
		rest := strings.TrimPrefix(s, string(FaultOperatorCrash))
		if r, ok := strings.CutPrefix(rest, " (action in flight took effect)"); ok {
			f.InFlight, rest = true, r
		}
		if rest != "" {
			if _, err := fmt.Sscanf(rest, " (clock %ds)", &f.Skew); err != nil {
				return Fault{}, fmt.Errorf("unknown operator crash %q", s)
			}
		}
		return f, nil
	case strings.HasPrefix(s, "partition {"), strings.HasPrefix(s, "partition-one-way {"):
		f := Fault{Kind: FaultPartition}
		prefix := "partition {"
		end := strings.Index(s, "}")
		if end < 0 {
			return f, fmt.Errorf("partition without side")
		}
		if strings.HasPrefix(s, "partition-one-way {") {
			f.Kind, prefix = FaultPartitionOneWay, "partition-one-way {"
			switch s[end+1:] {
			case " -x> rest":
				f.Outbound = true
			case " <x- rest":
			default:
				return f, fmt.Errorf("a one-way partition says -x> rest or <x- rest: %q", s)
			}
		}
		for _, name := range strings.Split(s[len(prefix):end], ",") {
			switch name {
			case "":
			case "operator":
				f.Operator = true
			case "client":
				f.Client = true
			default:
				if i, ok := parseSentinelName(name); ok {
					f.Sentinels = append(f.Sentinels, i)
					continue
				}
				ref, err := parseRef(name)
				if err != nil {
					return f, err
				}
				f.Nodes = append(f.Nodes, ref)
			}
		}
		return f, nil
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return Fault{}, fmt.Errorf("empty fault")
	}
	f := Fault{Kind: FaultKind(fields[0])}
	switch f.Kind {
	case FaultAPIConflict, FaultActuatorFailure:
		if len(fields) != 2 || !strings.HasPrefix(fields[1], "x") {
			return f, fmt.Errorf("want %s xN", f.Kind)
		}
		n, err := strconv.Atoi(fields[1][1:])
		f.Count = n
		return f, err
	case FaultSlowActuator:
		if len(fields) != 3 {
			return f, fmt.Errorf("want %s N ticks", f.Kind)
		}
		n, err := strconv.Atoi(fields[1])
		f.Ticks = n
		return f, err
	case FaultPause, FaultLinkLag:
		if len(fields) != 4 {
			return f, fmt.Errorf("want %s node N ticks", f.Kind)
		}
		ref, err := parseRef(fields[1])
		if err != nil {
			return f, err
		}
		n, err := strconv.Atoi(fields[2])
		f.Node, f.Ticks = ref, n
		return f, err
	}
	switch {
	case (f.Kind == FaultKillSentinel || f.Kind == FaultRenewSentinel) && len(fields) == 2, f.Kind == FaultPauseSentinel && len(fields) == 4:
		i, ok := parseSentinelName(fields[1])
		if !ok {
			return f, fmt.Errorf("%s: want a sentinel (sentinel-N), got %q", f.Kind, fields[1])
		}
		f.Sentinel = i
		if f.Kind == FaultPauseSentinel {
			n, err := strconv.Atoi(fields[2])
			f.Ticks = n
			return f, err
		}
		return f, nil
	}
	if f.Kind == FaultManualFailover && len(fields) == 4 && fields[2] == "and" && fields[3] == "back" {
		ref, err := parseRef(fields[1])
		f.Node, f.Back = ref, true
		return f, err
	}
	for _, k := range FaultKinds {
		if k == f.Kind && len(fields) == 2 {
			ref, err := parseRef(fields[1])
			f.Node = ref
			return f, err
		}
	}
	return f, fmt.Errorf("unknown fault %q", s)
}

// parseRef reads a NodeRef: "s<shard>-<ordinal>" or "primary-of-s<shard>".
func parseRef(s string) (NodeRef, error) {
	var r NodeRef
	if strings.HasPrefix(s, "primary-of-s") {
		n, err := strconv.Atoi(strings.TrimPrefix(s, "primary-of-s"))
		return NodeRef{Shard: n, Primary: true}, err
	}
	if _, err := fmt.Sscanf(s, "s%d-%d", &r.Shard, &r.Ordinal); err != nil {
		return r, fmt.Errorf("node %q: %w", s, err)
	}
	return r, nil
}

// ReadSchedule reads a schedule file: one step per line, optionally numbered as the
// simulate command prints them ("  12  fault: heal"); blank lines and lines starting with #
// are skipped, except "# topology: <name>", which names the topology.
func ReadSchedule(r io.Reader) (string, []Step, error) {
	var topology string
	var steps []Step
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if t, ok := strings.CutPrefix(line, "# topology:"); ok {
			topology = strings.TrimSpace(t)
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if fields := strings.SplitN(line, " ", 2); len(fields) == 2 {
			if _, err := strconv.Atoi(fields[0]); err == nil {
				line = strings.TrimSpace(fields[1])
			}
		}
		st, err := ParseStep(line)
		if err != nil {
			return topology, nil, fmt.Errorf("line %d: %w", n, err)
		}
		steps = append(steps, st)
	}
	return topology, steps, sc.Err()
}

// parseSentinelName reads a sentinel's name, "sentinel-<ordinal>".
func parseSentinelName(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, "sentinel-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil && i >= 0
}
