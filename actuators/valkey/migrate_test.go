package valkey

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestAClassicMigrationInterruptedAnywhereIsFinished: 3 primaries and an empty fourth hold
// 20,000 keys; the cluster is left as an operator crash at each step of a classic migration
// leaves it, on Valkey 8.0:
//   - slot a: open on both ends, half its keys moved (crash inside the MIGRATE loop);
//   - slot b: handed over on the target, the source not told yet (crash between the SETSLOTs);
//   - slot c: migrating to a third primary, some keys there (the migration of an abandoned plan);
//   - and a call whose budget ends before any batch.
//
// Calls of MigrateSlots for the source's range until nothing is left finish every slot: c goes
// where it was going (re-aiming it would strand the keys already there), the rest to the
// fourth node; no slot stays open on any node; every key reads back with its value through a
// cluster client (digest); valkey-cli --cluster check (an independent oracle) finds the
// cluster whole.
func TestAClassicMigrationInterruptedAnywhereIsFinished(t *testing.T) {
	c := newBenchCluster(t, "", 9, 20_000)
	defer c.stopAll()
	before := c.digest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src, dst, third := c.nodes[0], c.nodes[3], c.nodes[1]
	id := func(s *server) string {
		var out string
		if err := c.p.run(ctx, Addr(s.ip), func(ctx context.Context, cl vk.Client) (err error) {
			out, err = cl.Do(ctx, cl.B().ClusterMyid().Build()).ToString()
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	admin := func(s *server, args ...string) vk.ValkeyResult {
		var res vk.ValkeyResult
		_ = c.p.run(ctx, Addr(s.ip), func(ctx context.Context, cl vk.Client) error {
			res = cl.Do(ctx, cl.B().Arbitrary(args[0]).Args(args[1:]...).Build())
			return nil
		})
		return res
	}
	must := func(r vk.ValkeyResult) vk.ValkeyResult {
		t.Helper()
		if err := r.Error(); err != nil && !vk.IsValkeyNil(err) {
			t.Fatal(err)
		}
		return r
	}
	srcID, dstID, thirdID := id(src), id(dst), id(third)
	moveHalf := func(slot int, to *server) {
		ks, err := must(admin(src, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(slot), "1000")).AsStrSlice()
		if err != nil || len(ks) < 2 {
			t.Fatalf("slot %d has keys %v (%v): the test needs some", slot, ks, err)
		}
		args := append([]string{"MIGRATE", to.ip, strconv.Itoa(Port), "", "0", "5000", "AUTH2", UserOperator, testPasswords.Operator, "KEYS"}, ks[:len(ks)/2]...)
		must(admin(src, args...))
	}
	const a, b, cSlot = 100, 200, 300
	must(admin(dst, "CLUSTER", "SETSLOT", strconv.Itoa(a), "IMPORTING", srcID))
	must(admin(src, "CLUSTER", "SETSLOT", strconv.Itoa(a), "MIGRATING", dstID))
	moveHalf(a, dst)
	must(admin(dst, "CLUSTER", "SETSLOT", strconv.Itoa(b), "IMPORTING", srcID))
	must(admin(src, "CLUSTER", "SETSLOT", strconv.Itoa(b), "MIGRATING", dstID))
	ks, _ := must(admin(src, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(b), "1000")).AsStrSlice()
	must(admin(src, append([]string{"MIGRATE", dst.ip, strconv.Itoa(Port), "", "0", "5000", "AUTH2", UserOperator, testPasswords.Operator, "KEYS"}, ks...)...))
	must(admin(dst, "CLUSTER", "SETSLOT", strconv.Itoa(b), "NODE", dstID))
	must(admin(third, "CLUSTER", "SETSLOT", strconv.Itoa(cSlot), "IMPORTING", srcID))
	must(admin(src, "CLUSTER", "SETSLOT", strconv.Itoa(cSlot), "MIGRATING", thirdID))
	moveHalf(cSlot, third)

	primaries := c.ips()
	r := machine.SlotRange{Start: 0, End: 1000}
	// A move decided for another process of the source is refused, nothing moved.
	if res, err := c.p.MigrateSlots(ctx, src.ip, "not-"+survey(t, c.p, src).RunID, dst.ip, r, primaries, false, testPasswords.Operator, 15*time.Second); !errors.Is(err, ErrOtherProcess) || res.SlotsMoved != 0 {
		t.Fatalf("a move for another process of the source: %+v, %v; want it refused", res, err)
	}
	res, err := c.p.MigrateSlots(ctx, src.ip, survey(t, c.p, src).RunID, dst.ip, r, primaries, false, testPasswords.Operator, time.Nanosecond)
	if err != nil || res.SlotsMoved != 0 || res.SlotsLeft < 1000 { // 1000 once gossip told the source of slot b
		t.Fatalf("a call without budget: %+v, %v", res, err)
	}
	for calls := 0; ; calls++ {
		res, err = c.p.MigrateSlots(ctx, src.ip, "", dst.ip, r, primaries, false, testPasswords.Operator, 15*time.Second)
		if err != nil {
			t.Fatalf("call %d: %v", calls+1, err)
		}
		if res.SlotsLeft == 0 {
			break
		}
		if calls > 5 {
			t.Fatalf("still %d slots left after %d calls", res.SlotsLeft, calls+1)
		}
	}
	owned := c.owned(t)
	if fmt.Sprint(owned[3]) != fmt.Sprint([]machine.SlotRange{{Start: 0, End: 299}, {Start: 301, End: 1000}}) {
		t.Errorf("the fourth node serves %v, want 0-299 and 301-1000 (slot 300 finished to where it was going)", owned[3])
	}
	if !strings.Contains(fmt.Sprint(owned[1]), "{300 300}") {
		t.Errorf("slot 300 is not served by the node it was migrating to: %v", owned[1])
	}
	eventually(t, "no slot open on any node", func() bool {
		for _, s := range c.nodes {
			v, err := c.p.ClusterNodes(ctx, s.ip)
			if err != nil || v.OpenSlots() > 0 {
				return false
			}
		}
		return true
	})
	if after := c.digest(t); after != before {
		t.Fatalf("the keys read back differ: digest %s, before the migration %s", after, before)
	}
	c.check(t)
}

// digest reads every key through a cluster client and hashes names and values in key order.
func (c *benchCluster) digest(t testing.TB) string {
	t.Helper()
	cl := c.client(t)
	defer cl.Close()
	h := sha256.New()
	const batch = 1000
	for i := 0; i < c.keys; i += batch {
		cmds := make(vk.Commands, 0, batch)
		for k := i; k < min(i+batch, c.keys); k++ {
			cmds = append(cmds, cl.B().Get().Key("bench:"+strconv.Itoa(k)).Build())
		}
		for j, r := range cl.DoMulti(context.Background(), cmds...) {
			v, err := r.ToString()
			if err != nil {
				t.Fatalf("reading bench:%d: %v", i+j, err)
			}
			fmt.Fprintf(h, "%d=%s;", i+j, v)
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// check runs valkey-cli --cluster check until it reports the cluster whole (gossip settles).
func (c *benchCluster) check(t testing.TB) {
	t.Helper()
	clusterCheck(t, c.nodes[0].ip)
}

// clusterCheck runs valkey-cli --cluster check against the node at ip until it finds every slot
// covered and every node agreeing (gossip settles): an oracle independent of the operator.
func clusterCheck(t testing.TB, ip string) {
	t.Helper()
	var out string
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		var whole bool
		if out, whole = cliClusterCheck(ip); whole && !strings.Contains(out, "[WARNING]") {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("valkey-cli --cluster check does not find the cluster whole:\n%s", out)
}

// cliClusterCheck runs valkey-cli --cluster check against the node at ip once (logged in as the
// application: its user must be on) and reports whether every node agrees about the slots and
// every slot is covered: the independent oracle of the cluster tests.
func cliClusterCheck(ip string) (string, bool) {
	cmd := exec.Command("valkey-cli", "--cluster", "check", Addr(ip))
	cmd.Env = append(os.Environ(), "REDISCLI_AUTH="+testPasswords.Client)
	out, _ := cmd.CombinedOutput()
	return string(out), strings.Contains(string(out), "[OK] All nodes agree about slots configuration.") &&
		strings.Contains(string(out), "[OK] All 16384 slots covered.")
}
