package valkey

import (
	"strings"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The survey's parsers of what a node answers (INFO text, CLUSTER NODES, the seal in
// masterauth) under Go's fuzzer: whatever the text, they end without a panic, and what they
// accept is what the text says.

// infoSeed is an excerpt of INFO replication, keyspace and errorstats as Valkey 8.0 writes it.
const infoSeed = "# Replication\r\nrole:master\r\nconnected_slaves:1\r\nslave0:ip=10.0.0.2,port=6379,state=online,offset=42,lag=0\r\nmaster_replid:4c5f0b1e1f0a8e3b9d2c7a6b5e4d3c2b1a0f9e8d\r\nmaster_replid2:0000000000000000000000000000000000000000\r\nmaster_repl_offset:42\r\n\r\n# Keyspace\r\ndb0:keys=3,expires=1,avg_ttl=0\r\ndb3:keys=1,expires=0,avg_ttl=0\r\n\r\n# Errorstats\r\nerrorstat_MOVED:count=7\r\n"

func FuzzParseInfo(f *testing.F) {
	f.Add(infoSeed)
	f.Add("db0:keys=-5,expires=x\nerrorstat_MOVED:count=,\n#\n:\n")
	f.Fuzz(func(t *testing.T, s string) {
		m := parseInfo(s)
		for k, v := range m {
			if strings.Contains(k, "\n") || strings.Contains(v, "\n") || !strings.Contains(s, k+":"+v) {
				t.Fatalf("field %q = %q, not a line of the text", k, v)
			}
		}
		_ = keyspaceKeys(m)
		_ = redirectionCount(s)
		_ = historyID(m["master_replid"])
	})
}

func FuzzParseClusterNodes(f *testing.F) {
	f.Add("07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,host replica e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected\n" +
		"e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 [5461->-292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f] [93-<-292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f]\n")
	f.Add("txt:a 10.0.0.1:6379@16379 master,fail? - 0 0 18446744073709551615 disconnected 16383\n")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseClusterNodes(s)
		if err != nil {
			return
		}
		for _, n := range v.Nodes {
			for _, r := range n.Slots {
				if r.Start < 0 || r.End < r.Start || r.End >= machine.NumSlots {
					t.Fatalf("%s: slots %d-%d accepted", n.ID, r.Start, r.End)
				}
			}
		}
		_, _ = v.Myself()
		_ = v.OpenSlots()
		_, _ = v.OwnerOf(0)
		_, _ = v.OwnerOf(machine.NumSlots - 1)
	})
}

func FuzzParseSeal(f *testing.F) {
	f.Add(sealValue(time.UnixMilli(1_800_000_000_000), true, "incarnation-1"))
	f.Add(sealPrefix + "x;1;")
	f.Add("a replication password")
	f.Fuzz(func(t *testing.T, s string) {
		rec := parseSeal(s)
		if rec == (machine.SealRecord{}) {
			return
		}
		// A seal read back is the seal written with what was read.
		if again := parseSeal(sealValue(rec.At, rec.Unlinked, rec.Clock)); again != rec {
			t.Fatalf("%q reads as %+v, written again as %+v", s, rec, again)
		}
	})
}
