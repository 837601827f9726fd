package v1beta1

import (
	"os"
	"strings"
	"testing"
)

// TestSentinelRefusalSaysWhatTheCELRulesSay: each spec a stateless Sentinel rule refuses gets
// that rule's message, word for word as the CRD the chart installs has it (an independent copy:
// the generated YAML), and a spec the rules accept gets none.
func TestSentinelRefusalSaysWhatTheCELRulesSay(t *testing.T) {
	raw, err := os.ReadFile("../../charts/valkey-operator/files/crds/valkey.fsm.dev_valkeyclusters.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The YAML folds long messages over lines: compare with whitespace collapsed.
	crd := strings.Join(strings.Fields(string(raw)), " ")
	zero, one := int32(0), int32(1)
	cases := []struct {
		name   string
		spec   ValkeyClusterSpec
		refuse string
	}{
		{"accepted", ValkeyClusterSpec{Topology: TopologySentinel, Replicas: &one}, ""},
		{"TLS disabled is accepted", ValkeyClusterSpec{Topology: TopologySentinel, TLS: TLSSpec{Mode: TLSDisabled}}, ""},
		{"TLS", ValkeyClusterSpec{Topology: TopologySentinel, TLS: TLSSpec{Mode: TLSOnly}}, "does not run TLS yet"},
		{"replica-priority in any case", ValkeyClusterSpec{Topology: TopologySentinel, Config: map[string]ConfigValue{"Slave-Priority": "10"}}, "config sets replica-priority"},
		{"no replica", ValkeyClusterSpec{Topology: TopologySentinel, Replicas: &zero}, "at least one replica"},
		{"another topology", ValkeyClusterSpec{Topology: TopologyReplication, TLS: TLSSpec{Mode: TLSOnly}, Replicas: &zero}, ""},
	}
	for _, c := range cases {
		got := SentinelRefusal(&c.spec)
		if (got == "") != (c.refuse == "") || !strings.Contains(got, c.refuse) {
			t.Errorf("%s: %q, want a refusal saying %q", c.name, got, c.refuse)
		}
		if got != "" && !strings.Contains(crd, got) {
			t.Errorf("%s: %q is not the message of a rule in the CRD", c.name, got)
		}
	}
}

// TestSentinelAuthRefusalSaysWhatTheCELRuleSays: a change of auth.enabled, either way, gets the
// transition rule's message as the CRD has it; no change gets none.
func TestSentinelAuthRefusalSaysWhatTheCELRuleSays(t *testing.T) {
	raw, err := os.ReadFile("../../charts/valkey-operator/files/crds/valkey.fsm.dev_valkeyclusters.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := strings.Join(strings.Fields(string(raw)), " ")
	for _, c := range []struct{ was, now, refused bool }{{true, true, false}, {false, false, false}, {true, false, true}, {false, true, true}} {
		got := SentinelAuthRefusal(c.was, c.now)
		if (got != "") != c.refused {
			t.Errorf("%v to %v: %q, want refused %v", c.was, c.now, got, c.refused)
		}
		if got != "" && !strings.Contains(crd, got) {
			t.Errorf("%q is not the message of a rule in the CRD", got)
		}
	}
}
