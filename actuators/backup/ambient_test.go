package backup

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
)

// The default chain is read from this process's environment: these tests set it with
// t.Setenv (never in parallel) and point every other source somewhere empty, so that the
// developer's own AWS configuration is never used and no test dials the instance metadata
// service.

// chainVariables are the environment variables the SDK's default chain reads.
var chainVariables = []string{
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
	"AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME", "AWS_WEB_IDENTITY_TOKEN_FILE",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
	"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
}

// emptyEnvironment leaves the default chain nothing to find: no credential variables, empty
// shared config and credentials files, the instance metadata service turned off.
func emptyEnvironment(t *testing.T) {
	t.Helper()
	for _, k := range chainVariables {
		t.Setenv(k, "") // restored after the test
		_ = os.Unsetenv(k)
	}
	dir := t.TempDir()
	for k, name := range map[string]string{"AWS_CONFIG_FILE": "config", "AWS_SHARED_CREDENTIALS_FILE": "credentials"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv(k, path)
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// withoutKeys is store signing with the process's default chain instead of its keys.
func withoutKeys(store Store) Store {
	store.AccessKey, store.SecretKey = "", ""
	store.Ambient = NewAmbientCredentials()
	return store
}

// takeAndVerify backs up the node at ip into store as name and reads the object back
// (Verify: its size and sha256 as reported).
func takeAndVerify(t *testing.T, ip string, store Store, name string) (Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Take(ctx, Source{Addr: valkey.Addr(ip), User: valkey.UserReplication, Password: passwords.Replication}, store, name)
	if err != nil {
		return res, err
	}
	return res, Verify(ctx, store, name, res)
}

// TestAStoreWithoutKeysSignsWithTheEnvironmentsCredentials: the keys in the process's
// environment (the default chain's first source) write a backup and read it back; the store
// says whose credentials it used.
func TestAStoreWithoutKeysSignsWithTheEnvironmentsCredentials(t *testing.T) {
	emptyEnvironment(t)
	t.Setenv("AWS_ACCESS_KEY_ID", s3Access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3Secret)
	keyed := startStore(t, "127.77.44.1")
	startValkey(t, "", "127.77.44.2", t.TempDir(), "")
	load(t, "127.77.44.2", 100)
	store := withoutKeys(keyed)
	if _, err := takeAndVerify(t, "127.77.44.2", store, "ambient.rdb"); err != nil {
		t.Fatalf("a backup with the environment's credentials: %v", err)
	}
	if got := store.CredentialsSource(); got != "the operator's default chain" {
		t.Errorf("the store says its credentials are %q", got)
	}
	// Keys of the store's own win, wrong ones too: they fail rather than fall back.
	wrong := store
	wrong.AccessKey, wrong.SecretKey = "nobody", "nothing"
	if _, err := takeAndVerify(t, "127.77.44.2", wrong, "wrong.rdb"); err == nil {
		t.Fatal("a store with wrong keys wrote a backup: it used the default chain instead")
	}
	if keys, open := objects(t, keyed); len(keys) != 1 || open != 0 {
		t.Fatalf("the store holds %v and %d open uploads, want only the first backup", keys, open)
	}
}

// TestAStoreWithoutKeysAndAnEmptyEnvironmentFailsWithTheReason: nothing in the environment
// (variables, shared files, metadata service off) fails the backup with ErrNoCredentials and
// writes nothing; a store without keys that may not use the chain is not sent unsigned.
func TestAStoreWithoutKeysAndAnEmptyEnvironmentFailsWithTheReason(t *testing.T) {
	emptyEnvironment(t)
	keyed := startStore(t, "127.77.44.3")
	startValkey(t, "", "127.77.44.4", t.TempDir(), "")
	load(t, "127.77.44.4", 10)
	_, err := takeAndVerify(t, "127.77.44.4", withoutKeys(keyed), "none.rdb")
	if !errors.Is(err, ErrNoCredentials) {
		t.Fatalf("a backup with no credentials anywhere: %v, want %v", err, ErrNoCredentials)
	}
	t.Logf("the refusal: %v", err)
	bare := keyed
	bare.AccessKey, bare.SecretKey = "", ""
	if _, err := takeAndVerify(t, "127.77.44.4", bare, "bare.rdb"); err == nil {
		t.Fatal("a store with neither keys nor the default chain wrote a backup")
	}
	if got := bare.CredentialsSource(); got != "none" {
		t.Errorf("a store with no credentials says they are %q", got)
	}
	if keys, open := objects(t, keyed); len(keys) != 0 || open != 0 {
		t.Fatalf("the store holds %v and %d open uploads", keys, open)
	}
}

// podIdentityAgent serves container credentials on loopback as the EKS Pod Identity agent
// does: only to a caller presenting the token of the file the pod's environment names.
type podIdentityAgent struct {
	mu    sync.Mutex
	token string // the token it accepts now
	calls int    // credentials served
}

func (a *podIdentityAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.Header.Get("Authorization") != a.token {
		http.Error(w, `{"code":"AccessDeniedException","message":"bad token"}`, http.StatusForbidden)
		return
	}
	a.calls++
	// Expired already: the SDK asks again for every request that needs credentials, as it
	// does once real ones near their expiry.
	_ = json.NewEncoder(w).Encode(map[string]string{
		"AccessKeyId": s3Access, "SecretAccessKey": s3Secret,
		"Expiration": time.Unix(0, 0).UTC().Format(time.RFC3339),
	})
}

func (a *podIdentityAgent) rotate(token string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.token = token
}

func (a *podIdentityAgent) served() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

// TestAStoreWithoutKeysSignsWithPodIdentityCredentials: the container credentials endpoint
// (AWS_CONTAINER_CREDENTIALS_FULL_URI, the token read from AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE,
// as EKS Pod Identity sets them) served on loopback signs a backup. The credentials are asked
// for again as they expire, with the token file read again: a token rotated in the file (the
// kubelet refreshes projected tokens) is the one presented next.
func TestAStoreWithoutKeysSignsWithPodIdentityCredentials(t *testing.T) {
	emptyEnvironment(t)
	agent := &podIdentityAgent{token: "token-1"}
	ln, err := net.Listen("tcp", "127.77.44.5:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: agent, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	tokenFile := filepath.Join(t.TempDir(), "eks-pod-identity-token")
	if err := os.WriteFile(tokenFile, []byte("token-1"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://"+ln.Addr().String()+"/v1/credentials")
	t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", tokenFile)

	keyed := startStore(t, "127.77.44.6")
	startValkey(t, "", "127.77.44.7", t.TempDir(), "")
	load(t, "127.77.44.7", 100)
	store := withoutKeys(keyed)
	if _, err := takeAndVerify(t, "127.77.44.7", store, "first.rdb"); err != nil {
		t.Fatalf("a backup with Pod Identity's credentials: %v", err)
	}
	first := agent.served()
	if first < 2 {
		t.Fatalf("the agent served credentials %d time(s) for a backup's several requests: they were not asked for again", first)
	}
	if err := os.WriteFile(tokenFile, []byte("token-2"), 0o600); err != nil {
		t.Fatal(err)
	}
	agent.rotate("token-2")
	if _, err := takeAndVerify(t, "127.77.44.7", store, "second.rdb"); err != nil {
		t.Fatalf("a backup after the token rotated: %v", err)
	}
	if agent.served() == first {
		t.Fatal("the second backup asked the agent for nothing")
	}
	if keys, _ := objects(t, keyed); len(keys) != 2 {
		t.Fatalf("the store holds %v, want both backups", keys)
	}
}
