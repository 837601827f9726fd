package manager

import (
	"testing"

	"github.com/valkey-fsm/valkey-operator/internal/testapiserver"
)

// One API server for the tests that need one (started on first use); the others do not start it.
var server = testapiserver.Server{ServiceRange: "127.246.0.0/16"}

func TestMain(m *testing.M) { testapiserver.Main(m, &server) }
