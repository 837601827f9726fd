package testapiserver

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
	"github.com/valkey-fsm/valkey-operator/operator/conversionwebhook"
)

// Server is a test package's API server. The zero value with ServiceRange set is ready.
type Server struct {
	// ServiceRange is the package's loopback ClusterIP range: the API server allocates from
	// it at start even when no test creates a Service.
	ServiceRange string
	// CRDDir, when not empty, holds CRDs to install (it must exist). Those of the operator's
	// kinds (two versions, v1beta1 stored) get a conversion webhook: the operator's, served by
	// this process on loopback (ServeConversion), as the operator serves it in a cluster.
	CRDDir string
	// Serve, with CRDDir, registers more handlers on the webhook server that converts (the
	// admission webhooks) before it starts; cfg is the API server's administrator. Its error
	// fails every test that asks for the server.
	Serve func(srv webhook.Server, cfg *rest.Config) error
	// Then runs once after the start, for what a package adds (users, clients, processes);
	// its error fails every test that asks for the server.
	Then func(env *envtest.Environment, cfg *rest.Config) error
	// Stopping runs in Stop before the API server stops (processes started by Then).
	Stopping func()

	once sync.Once
	env  *envtest.Environment
	cfg  *rest.Config
	err  error
	// stopConversion stops the conversion webhook, when one runs.
	stopConversion func()
}

// Start starts the server on first use and returns it; a failure to start fails tb.
func (s *Server) Start(tb testing.TB) (*envtest.Environment, *rest.Config) {
	tb.Helper()
	s.once.Do(func() { s.err = s.start() })
	if s.err != nil {
		tb.Fatal(s.err)
	}
	return s.env, s.cfg
}

func (s *Server) start() error {
	bin, err := kubeassets.Dir()
	if err != nil {
		return err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: bin}
	if s.CRDDir != "" {
		env.CRDDirectoryPaths, env.ErrorIfCRDPathMissing = []string{s.CRDDir}, true
		// envtest points spec.conversion of every CRD whose kind is convertible in this
		// scheme at its local webhook address, with the CA it made.
		env.Scheme = conversionwebhook.Scheme()
	}
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", s.ServiceRange)
	s.env = env
	if s.cfg, err = env.Start(); err != nil {
		return fmt.Errorf("starting envtest (CRDs %q): %w", s.CRDDir, err)
	}
	if s.CRDDir != "" {
		var more []func(webhook.Server)
		var serveErr error
		if s.Serve != nil {
			more = append(more, func(srv webhook.Server) { serveErr = s.Serve(srv, s.cfg) })
		}
		if s.stopConversion, err = ServeConversion(&env.WebhookInstallOptions, more...); err != nil {
			return err
		}
		if serveErr != nil {
			return serveErr
		}
	}
	if s.Then != nil {
		return s.Then(env, s.cfg)
	}
	return nil
}

// Stop stops the server if it was started.
func (s *Server) Stop() error {
	if s.env == nil {
		return nil
	}
	if s.Stopping != nil {
		s.Stopping()
	}
	if s.stopConversion != nil {
		s.stopConversion()
	}
	return s.env.Stop()
}

// Main is a test package's TestMain: envtest gets a logger (without one it prints a warning
// with a stack trace), the tests run, the server stops, and a failure to stop fails the run.
func Main(m *testing.M, s *Server) {
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		code = 1
	}
	os.Exit(code)
}
