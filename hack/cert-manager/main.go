// Command cert-manager-controllers runs cert-manager's own controllers (v1.21.2, from the Go
// module proxy) against a kubeconfig: the issuers, the CertificateRequest approver, the CA and
// self-signed signers and the Certificate state machine (trigger, key manager, request manager,
// issuing, readiness, revision manager), and its cainjector, which fills the caBundle of
// webhook configurations and CRDs from a Certificate's Secret. The local cluster (e2e/localcluster StartCertManager)
// runs it as a host process so that tests get certificates from the real cert-manager, with its
// real renewal behaviour, instead of from a stand-in.
//
// cert-manager's cmd/controller module is not served by the Go module proxy, and its root
// module pins its own Kubernetes libraries; this small main lives in a module of its own
// (hack/cert-manager/go.mod) so that those versions never touch the project's go.mod, and the
// project's `go build ./...` and `go vet ./...` do not descend into it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	// Each package registers its controller (or, under pkg/issuer, the issuer kind the
	// issuers controllers check) in init. ACME, Vault, Venafi, the ingress and gateway shims
	// and the CertificateSigningRequest signers are left out: nothing here reaches outside
	// the machine, and every import adds to a build that is already minutes long.
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// controllers are the controllers this binary runs. It refuses to start when one of them is
// not registered, so that a cert-manager upgrade that moves a package fails loudly rather than
// leaving Certificates that never become Ready.
var controllers = []string{
	"issuers",
	"clusterissuers",
	// Without the approver, CertificateRequests wait for an approval that never comes.
	"certificaterequests-approver",
	"certificaterequests-issuer-ca",
	"certificaterequests-issuer-selfsigned",
	"certificates-trigger",
	"certificates-key-manager",
	"certificates-request-manager",
	"certificates-issuing",
	"certificates-readiness",
	"certificates-revision-manager",
}

func main() {
	// A flag set of its own: controller-runtime (cainjector's manager) registers its own
	// --kubeconfig on the global one.
	flags := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	kubeconfig := flags.String("kubeconfig", "", "admin kubeconfig of the cluster (required)")
	clusterResourceNamespace := flags.String("cluster-resource-namespace", "cert-manager", "namespace where the Secrets that ClusterIssuers refer to live")
	workers := flags.Int("workers", 5, "workers per controller")
	verbosity := flags.Int("v", 2, "log verbosity (cert-manager logs its info messages at 2)")
	_ = flags.Parse(os.Args[1:])
	if *kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "cert-manager-controllers: --kubeconfig is required")
		os.Exit(2)
	}

	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("v", strconv.Itoa(*verbosity))
	logf.InitLogs()
	// controller-runtime (cainjector's manager) logs through the same klog output.
	ctrl.SetLogger(logf.Log)
	defer logf.FlushLogs()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, "controller")
	if err := run(ctx, *kubeconfig, *clusterResourceNamespace, *workers); err != nil {
		logf.Log.Error(err, "cert-manager-controllers failed")
		logf.FlushLogs()
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, clusterResourceNamespace string, workers int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := logf.FromContext(ctx)

	// The values cert-manager's controller flags default to (internal/apis/config/controller/
	// v1alpha1/defaults.go), which this module cannot import: a zero backoff would re-issue a
	// failing Certificate in a tight loop, and no copied annotation prefixes would differ from
	// what a real installation puts on CertificateRequests.
	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions: controller.IssuerOptions{
			ClusterResourceNamespace: clusterResourceNamespace,
		},
		CertificateOptions: controller.CertificateOptions{
			CopiedAnnotationPrefixes:                 []string{"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/"},
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	})
	if err != nil {
		return fmt.Errorf("building the controller context: %w", err)
	}
	// The base context holds the informer factories every controller registers its
	// informers with; it is the same one the constructors below get from the factory.
	base, err := factory.Build()
	if err != nil {
		return err
	}

	known := controller.Known()
	type running struct {
		name string
		ctrl controller.Interface
	}
	var all []running
	for _, name := range controllers {
		construct, ok := known[name]
		if !ok {
			return fmt.Errorf("controller %q is not registered in this build of cert-manager", name)
		}
		c, err := construct(factory)
		if err != nil {
			return fmt.Errorf("constructing controller %s: %w", name, err)
		}
		all = append(all, running{name, c})
	}
	for name := range known {
		if !slices.Contains(controllers, name) {
			log.V(logf.InfoLevel).Info("skipping controller", "controller", name)
		}
	}

	var wg sync.WaitGroup
	errs := make(chan error, len(all)+1)
	for _, r := range all {
		wg.Go(func() {
			log.V(logf.InfoLevel).Info("starting controller", "controller", r.name)
			if err := r.ctrl.Run(workers, ctx); err != nil && !errors.Is(err, context.Canceled) {
				errs <- fmt.Errorf("controller %s: %w", r.name, err)
				// One controller gone leaves the others waiting for work it would have
				// done: stop them all, as cert-manager does.
				cancel()
			}
		})
	}
	// cainjector is a deployment of its own in a real installation; here it shares the
	// process and, like a controller above, stops the others when it fails.
	wg.Go(func() {
		log.V(logf.InfoLevel).Info("starting cainjector")
		if err := runCAInjector(ctx, kubeconfig); err != nil && !errors.Is(err, context.Canceled) {
			errs <- err
			cancel()
		}
	})
	// Only now: the constructors above registered the informers they need, and a factory
	// starts only the informers registered before Start.
	base.SharedInformerFactory.Start(ctx.Done())
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())

	wg.Wait()
	base.HTTP01ResourceMetadataInformersFactory.Shutdown()
	base.KubeSharedInformerFactory.Shutdown()
	base.SharedInformerFactory.Shutdown()
	close(errs)
	var err2 error
	for e := range errs {
		err2 = errors.Join(err2, e)
	}
	if err2 == nil {
		log.V(logf.InfoLevel).Info("control loops exited")
	}
	return err2
}
