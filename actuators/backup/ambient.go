package backup

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
)

// ErrNoCredentials is a store without static keys whose process environment provides no
// credentials either.
var ErrNoCredentials = errors.New("no credentials: the store names no credentials Secret and the operator's environment provides none (IRSA, Pod Identity, instance role)")

// AmbientCredentials is the AWS SDK's default credential chain of the process running the
// backups: environment variables, the shared config and credentials files (web identity
// tokens: IRSA, or a projected token federated to a role elsewhere), the container
// credentials endpoint (EKS Pod Identity, ECS) and the instance metadata service.
//
// It is the process's identity, not a tenant's: whoever may point a store at a bucket acts
// with it. It is therefore a value the caller holds (the operator makes one only when its
// administrator allows it) rather than something a Store falls back to on its own.
//
// One serves the whole process: each region's chain is loaded once and keeps its credentials
// cache, so that a web identity token is exchanged once an hour, not once per request. The
// chain is asked on every request and refreshes what expires (a rotated token file is read
// again).
type AmbientCredentials struct {
	mu sync.Mutex
	// chains holds each region's loaded chain.
	chains map[string]aws.CredentialsProvider
}

// NewAmbientCredentials is the default chain of this process's environment, loaded on first
// use.
func NewAmbientCredentials() *AmbientCredentials {
	return &AmbientCredentials{chains: map[string]aws.CredentialsProvider{}}
}

// chain is the default chain for a store in region (the region the environment names wins:
// it is where the process's identity is exchanged, STS for a web identity).
func (a *AmbientCredentials) chain(ctx context.Context, region string) (aws.CredentialsProvider, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.chains[region]; ok {
		return c, nil
	}
	var opts []func(*config.LoadOptions) error
	if region != "" {
		opts = append(opts, config.WithDefaultRegion(region))
	}
	// The chain's own HTTP client, not the store's: its endpoints (the metadata service, the
	// Pod Identity agent) are link-local by design and set by the process's environment, not
	// by a tenant, whereas the store's client refuses them.
	cfg, err := config.LoadDefaultConfig(context.WithoutCancel(ctx), opts...)
	if err != nil {
		// Not kept: a configuration fixed (a shared config file mounted anew) is read again.
		return nil, fmt.Errorf("loading the operator's default credential chain: %w", err)
	}
	a.chains[region] = cfg.Credentials
	return cfg.Credentials, nil
}

// ambientProvider is a store's credentials from the default chain, loaded when a request
// first asks for them.
type ambientProvider struct {
	a      *AmbientCredentials
	region string
}

func (p ambientProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	chain, err := p.a.chain(ctx, p.region)
	if err != nil {
		return aws.Credentials{}, err
	}
	if chain == nil {
		return aws.Credentials{}, ErrNoCredentials
	}
	creds, err := chain.Retrieve(ctx)
	if err != nil {
		// The chain falls through to the instance metadata service when nothing else is
		// configured: its failure means the environment names no identity at all. A source
		// that is configured and fails (STS refusing a web identity token, the Pod Identity
		// agent down) keeps its own error.
		if aws.IsCredentialsProvider(chain, (*ec2rolecreds.Provider)(nil)) {
			return aws.Credentials{}, fmt.Errorf("%w (%v)", ErrNoCredentials, err)
		}
		return aws.Credentials{}, fmt.Errorf("credentials from the operator's default chain: %w", err)
	}
	return creds, nil
}
