package celtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/valkey-fsm/valkey-operator/internal/testapiserver"
)

// One API server for the whole package, with the v1beta1 CRDs generated at its start; every
// test works in its own namespace.
var server = testapiserver.Server{ServiceRange: "127.245.0.0/16", Then: installV1beta1CRDs}

func TestMain(m *testing.M) { testapiserver.Main(m, &server) }

// installV1beta1CRDs generates the CRDs of apis/v1beta1 alone into a temporary directory and
// installs them.
func installV1beta1CRDs(_ *envtest.Environment, cfg *rest.Config) error {
	dir, err := os.MkdirTemp("", "v1beta1-crds-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	gen := exec.CommandContext(context.Background(), "../../../hack/controller-gen.sh", "crds", "./apis/v1beta1/...", dir)
	if out, err := gen.CombinedOutput(); err != nil {
		return fmt.Errorf("generating the v1beta1 CRDs: %w\n%s", err, out)
	}
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true})
	return err
}

func apiServer(tb testing.TB) dynamic.Interface {
	tb.Helper()
	_, cfg := server.Start(tb)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return dyn
}
