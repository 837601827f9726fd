package testapiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/valkey-fsm/valkey-operator/operator/conversionwebhook"
)

// ServeConversion serves the operator's conversion webhook (operator/conversionwebhook) at the
// loopback address and with the certificate of opts (made by opts.PrepWithoutInstalling, as
// envtest does before it installs CRDs whose spec.conversion names that address and CA), until
// the returned stop is called. It returns once the server accepts connections: the CRDs
// store v1beta1, so every v1alpha1 request of a test needs it from the start. more register
// further handlers on the same server (the admission webhooks), as the operator serves them.
func ServeConversion(opts *envtest.WebhookInstallOptions, more ...func(webhook.Server)) (stop func(), err error) {
	srv := webhook.NewServer(webhook.Options{Host: opts.LocalServingHost, Port: opts.LocalServingPort, CertDir: opts.LocalServingCertDir})
	conversionwebhook.Register(srv, conversionwebhook.Scheme())
	for _, register := range more {
		register(srv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	stop = func() {
		cancel()
		<-done //nolint:errcheck // the server's error at a requested stop says nothing
	}
	addr := net.JoinHostPort(opts.LocalServingHost, strconv.Itoa(opts.LocalServingPort))
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only whether it listens
		if err == nil {
			_ = conn.Close()
			return stop, nil
		}
		select {
		case err := <-done:
			cancel()
			return nil, errors.Join(fmt.Errorf("the conversion webhook on %s stopped", addr), err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("the conversion webhook on %s does not listen: %w", addr, err)
		}
	}
}
