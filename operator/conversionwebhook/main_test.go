package conversionwebhook_test

import (
	"testing"

	"github.com/valkey-fsm/valkey-operator/internal/testapiserver"
)

// One API server for the package with the chart's CRDs (v1beta1 stored) and this package's
// webhook converting for it on loopback.
var server = testapiserver.Server{ServiceRange: "127.244.0.0/16", CRDDir: "../../charts/valkey-operator/files/crds"}

func TestMain(m *testing.M) { testapiserver.Main(m, &server) }
