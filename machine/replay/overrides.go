package replay

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// Override is one changed setting of a what-if replay: every recorded observation's spec is
// given Value for Key before the machine decides on it.
type Override struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	set   func(*machine.Spec)
}

func (o Override) String() string { return o.Key + "=" + o.Value }

// setting is a spec setting a what-if may change: the ones that decide when and how the
// machine acts on what it sees, not what the user asks for (a replica count or a revision
// would be another cluster, whose world the journal did not record).
type setting struct {
	help  string
	parse func(string) (func(*machine.Spec), error)
}

var settings = map[string]setting{
	"detectionProbes": {"consecutive failed probes that make an unreachable primary lost (spec.failover.failureThreshold)", intSetting(1, func(s *machine.Spec, n int) { s.FailureThreshold = n })},
	"fenceTimeout":    {"how long an isolated primary may still accept writes, the wait before a promoted replica opens (a duration: 10s)", durationSetting(func(s *machine.Spec, d time.Duration) { s.FenceTimeout = d })},
	"minSyncReplicas": {"the write guarantee: replicas a write waits for, and the quorum a failover needs", intSetting(0, func(s *machine.Spec, n int) { s.MinSyncReplicas = n })},
	"rotationGrace":   {"how long old passwords keep working after a rotation publishes the new ones (a duration)", durationSetting(func(s *machine.Spec, d time.Duration) { s.RotationGrace = d })},
	"fsyncAlways":     {"nodes fsync every write before acknowledging it (true or false)", boolSetting(func(s *machine.Spec, b bool) { s.FsyncAlways = b })},
}

// aliases are other names of the settings (the API's).
var aliases = map[string]string{"failureThreshold": "detectionProbes"}

// Settings lists the keys --set accepts, with what each means, one per line.
func Settings() string {
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: %s\n", k, settings[k].help)
	}
	return b.String()
}

// ParseOverrides parses --set values, each KEY=VALUE. An unknown key or a value that does not
// parse is refused, naming the keys that exist: a typo must not pass for a replay that
// changed nothing.
func ParseOverrides(sets []string) ([]Override, error) {
	var out []Override
	seen := map[string]bool{}
	for _, kv := range sets {
		key, value, ok := strings.Cut(kv, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || key == "" || value == "" {
			return nil, fmt.Errorf("--set %q: want KEY=VALUE, e.g. detectionProbes=5", kv)
		}
		if a, ok := aliases[key]; ok {
			key = a
		}
		s, ok := settings[key]
		if !ok {
			return nil, fmt.Errorf("--set %s: unknown setting %q; a replay can change:\n%s", kv, key, Settings())
		}
		if seen[key] {
			return nil, fmt.Errorf("--set %s: %s is set twice", kv, key)
		}
		seen[key] = true
		set, err := s.parse(value)
		if err != nil {
			return nil, fmt.Errorf("--set %s: %v", kv, err)
		}
		out = append(out, Override{Key: key, Value: value, set: set})
	}
	return out, nil
}

// apply returns obs with the overrides applied to its spec (obs itself is not changed).
func apply(obs machine.Observation, overrides []Override) machine.Observation {
	for _, o := range overrides {
		o.set(&obs.Spec)
	}
	return obs
}

func intSetting(least int, set func(*machine.Spec, int)) func(string) (func(*machine.Spec), error) {
	return func(v string) (func(*machine.Spec), error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < least {
			return nil, fmt.Errorf("want a whole number of at least %d, got %q", least, v)
		}
		return func(s *machine.Spec) { set(s, n) }, nil
	}
}

func durationSetting(set func(*machine.Spec, time.Duration)) func(string) (func(*machine.Spec), error) {
	return func(v string) (func(*machine.Spec), error) {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("want a duration such as 10s or 1m30s, got %q", v)
		}
		return func(s *machine.Spec) { set(s, d) }, nil
	}
}

func boolSetting(set func(*machine.Spec, bool)) func(string) (func(*machine.Spec), error) {
	return func(v string) (func(*machine.Spec), error) {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("want true or false, got %q", v)
		}
		return func(s *machine.Spec) { set(s, b) }, nil
	}
}
