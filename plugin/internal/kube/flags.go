package kube

import (
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// userAgent names the plugin in the API server's audit log and request metrics.
const userAgent = "kubectl-valkey"

// Flags are kubectl's standard connection flags (--kubeconfig, --context, --cluster, --user,
// -n/--namespace, --server, --token, --as, --request-timeout, the TLS flags ...), with
// kubectl's precedence: flag, then $KUBECONFIG, then ~/.kube/config.
//
// They are client-go's clientcmd flags, which k8s.io/cli-runtime's ConfigFlags wraps. The
// wrapper itself is not used because its package also brings in kustomize, the resource
// builder and the discovery disk cache, which the plugin has no use for and which the
// module does not require.
type Flags struct {
	loading   *clientcmd.ClientConfigLoadingRules
	overrides clientcmd.ConfigOverrides
}

// NewFlags returns flags with kubectl's defaults.
func NewFlags() *Flags {
	return &Flags{loading: clientcmd.NewDefaultClientConfigLoadingRules()}
}

// AddFlags registers the flags, as persistent flags of the root command so that they are
// accepted after any verb as with kubectl.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.loading.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "",
		"Path to the kubeconfig file to use for CLI requests.")
	clientcmd.BindOverrideFlags(&f.overrides, fs, clientcmd.RecommendedConfigOverrideFlags(""))
}

// clientConfig is built on each use, after the flags were parsed.
func (f *Flags) clientConfig() clientcmd.ClientConfig {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(f.loading, &f.overrides)
}

// RESTConfig is the client configuration the flags select.
func (f *Flags) RESTConfig() (*rest.Config, error) {
	cfg, err := f.clientConfig().ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = userAgent
	return cfg, nil
}

// Namespace is -n, else the namespace of the kubeconfig context, else "default".
func (f *Flags) Namespace() (string, error) {
	ns, _, err := f.clientConfig().Namespace()
	return ns, err
}
