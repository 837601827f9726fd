package backup

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
)

// TestTheLoadListenerDropsStallingStrangersAndStillServesTheNode: strangers reach the load's
// listener before the node does — one that sends nothing, one that sends an endless line. The
// silent one is dropped once authTimeout passed, the endless one after a few KiB; the node,
// pointed at the listener while both are connected, still takes the snapshot (a real
// valkey-server, its data compared as a digest with the snapshot's).
func TestTheLoadListenerDropsStallingStrangersAndStillServesTheNode(t *testing.T) {
	store := startStore(t, "127.77.50.1")
	ip, listenIP := "127.77.50.2", "127.77.50.3"
	startValkey(t, "", ip, t.TempDir(), "")
	load(t, ip, 200)
	atSnapshot, n := digest(t, ip)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src := Source{Addr: valkey.Addr(ip), User: valkey.UserReplication, Password: passwords.Replication}
	res, err := Take(ctx, src, store, "listener.rdb")
	if err != nil {
		t.Fatal(err)
	}
	load(t, ip, 300) // more keys than the snapshot: a load shows
	if d, _ := digest(t, ip); d == atSnapshot {
		t.Fatal("the writes after the snapshot changed nothing: the test proves nothing")
	}
	head, err := store.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String(store.Key("listener.rdb"))})
	if err != nil {
		t.Fatal(err)
	}

	fs := fullSync{token: randomHex(20), store: store, name: "listener.rdb", rec: res, etag: aws.ToString(head.ETag), replID: randomHex(20), connected: make(chan struct{})}
	ln, err := net.Listen("tcp", net.JoinHostPort(listenIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	serveCtx, stopServing := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- fs.serve(serveCtx, ln) }()
	defer func() {
		stopServing()
		if err := <-served; err != nil {
			t.Logf("the listener stopped: %v", err)
		}
	}()

	silent, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	endless, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer endless.Close()
	// The endless line: bytes without a line end, until the listener hangs up.
	sentBeforeDrop := make(chan int, 1)
	go func() {
		chunk := []byte(strings.Repeat("A", 1024))
		sent := 0
		_ = endless.SetWriteDeadline(time.Now().Add(30 * time.Second))
		for {
			n, err := endless.Write(chunk)
			sent += n
			if errors.Is(err, os.ErrDeadlineExceeded) {
				sentBeforeDrop <- -1 // our own deadline: never dropped
				return
			}
			if err != nil {
				sentBeforeDrop <- sent
				return
			}
		}
	}()
	silentDropped := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		_ = silent.SetReadDeadline(time.Now().Add(authTimeout + 20*time.Second))
		_, err := io.Copy(io.Discard, silent)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			silentDropped <- -1 // our own deadline: never dropped
			return
		}
		silentDropped <- time.Since(start)
	}()
	time.Sleep(200 * time.Millisecond) // both strangers are in before the node

	// The node, pointed at the listener as Load does.
	oracle := client(t, ip, oracleUser, oraclePassword)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	if err := oracle.Do(ctx, oracle.B().ConfigSet().ParameterValue().ParameterValue("masteruser", loadUser).ParameterValue("masterauth", fs.token).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := oracle.Do(ctx, oracle.B().Replicaof().Host(listenIP).Port(int64(ln.Addr().(*net.TCPAddr).Port)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = oracle.Do(context.Background(), oracle.B().Replicaof().No().One().Build()).Error() }()
	loaded := false
	for deadline := time.Now().Add(authTimeout / 2); time.Now().Before(deadline) && !loaded; time.Sleep(50 * time.Millisecond) {
		info, err := infoOf(ctx, oracle, "replication", "persistence")
		loaded = err == nil && info["master_link_status"] == "up" && info["master_sync_in_progress"] == "0" && info["loading"] == "0"
	}
	if !loaded {
		t.Fatalf("the node did not take the snapshot from %s:%s within %v while strangers were connected", listenIP, port, authTimeout/2)
	}
	select {
	case sent := <-sentBeforeDrop:
		if sent < 0 {
			t.Fatal("the endless line was never dropped")
		}
		// The listener reads at most maxLine before it hangs up; the kernel's buffers hold
		// some more of what was written.
		if sent > 8<<20 {
			t.Errorf("the endless line was dropped only after %d bytes", sent)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the endless line was not dropped")
	}
	switch took := <-silentDropped; {
	case took < 0:
		t.Fatal("the silent stranger was never dropped")
	case took < authTimeout-time.Second || took > authTimeout+5*time.Second:
		t.Errorf("the silent stranger was dropped after %v, want about %v", took, authTimeout)
	}
	// The strangers were dropped while the node was still connected (taking the snapshot did
	// not end them); now the node is detached and holds the snapshot.
	if err := oracle.Do(ctx, oracle.B().Replicaof().No().One().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if d, m := digest(t, ip); d != atSnapshot || m != n {
		t.Fatalf("after the load the node holds %d keys (digest %s), the snapshot %d (digest %s)", m, d, n, atSnapshot)
	}
}
