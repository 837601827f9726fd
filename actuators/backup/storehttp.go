package backup

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// A store's endpoint is a tenant's input: whoever may create a ValkeyCluster names the host
// the operator connects to with the store's credentials and the cluster's data. The HTTP
// client of every store request therefore
//   - speaks HTTPS unless the store opts out (Store.AllowPlainHTTP): credentials and snapshots
//     are not sent in clear by accident;
//   - follows no redirect: the endpoint named is the only host the operator talks to;
//   - refuses, after name resolution and before connecting, link-local addresses and the cloud
//     metadata services: a tenant must not make the operator fetch the node's or the cloud
//     account's credentials. The check is on the address the dialer is about to connect to
//     (net.Dialer.Control), so a name that resolves differently later (DNS rebinding) is
//     checked again on every connection.

// ErrRefusedAddress is a store endpoint address the operator does not connect to.
var ErrRefusedAddress = errors.New("refused store address")

// ErrPlainHTTP is a store endpoint that is plain HTTP without the store's opt-out.
var ErrPlainHTTP = errors.New("plain HTTP store endpoint")

// ErrRedirect is a store answering with a redirect, which the operator does not follow.
var ErrRedirect = errors.New("store redirect")

// metadataAddresses are cloud metadata and platform services outside the link-local ranges
// (the link-local ones, such as 169.254.169.254 and 169.254.170.2, are refused as such).
var metadataAddresses = map[netip.Addr]string{
	netip.MustParseAddr("fd00:ec2::254"):   "the AWS instance metadata service (IPv6)",
	netip.MustParseAddr("fd00:ec2::23"):    "the EKS Pod Identity agent (IPv6)",
	netip.MustParseAddr("100.100.100.200"): "the Alibaba Cloud metadata service",
	netip.MustParseAddr("168.63.129.16"):   "the Azure platform's WireServer",
}

// refusedAddress says why the operator does not connect to ip for a store ("" when it may).
func refusedAddress(ip netip.Addr) string {
	ip = ip.Unmap()
	if what, ok := metadataAddresses[ip]; ok {
		return what
	}
	switch {
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		// 169.254.0.0/16 and fe80::/10: the cloud metadata services (169.254.169.254), the
		// container credentials endpoints (169.254.170.2), the node's own link.
		return "a link-local address, where cloud metadata and credentials services answer"
	case ip.IsUnspecified():
		return "the unspecified address, which reaches the operator's own host"
	}
	return ""
}

// refuseAddresses is the dialer's Control: it runs after name resolution, on the address a
// connection is about to be made to, and refuses it before any packet is sent.
func refuseAddresses(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot read the address %q to check it: %v", ErrRefusedAddress, address, err)
	}
	if why := refusedAddress(ap.Addr()); why != "" {
		return fmt.Errorf("%w: the store's endpoint resolves to %s, %s; the operator does not connect there: set endpoint to the store's own address", ErrRefusedAddress, ap.Addr(), why)
	}
	return nil
}

// newStoreHTTPClient is the HTTP client of store requests (see above). resolver resolves the
// endpoint's name (nil: the system's).
func newStoreHTTPClient(resolver *net.Resolver, allowPlainHTTP bool) *http.Client {
	tr := awshttp.NewBuildableClient().GetTransport() // the SDK's defaults (timeouts, pools, TLS)
	dialer := &net.Dialer{Timeout: awshttp.DefaultDialConnectTimeout, KeepAlive: awshttp.DefaultDialKeepAliveTimeout, Resolver: resolver, Control: refuseAddresses}
	tr.DialContext = dialer.DialContext
	return &http.Client{
		Transport: requestCheck{next: tr, allowPlainHTTP: allowPlainHTTP},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			return fmt.Errorf("%w: %s answered with a redirect to %s, which the operator does not follow: set endpoint to the address the store is served at", ErrRedirect, via[0].URL.Host, req.URL.Redacted())
		},
	}
}

// requestCheck refuses, before it is sent, a plain-HTTP request the store does not allow and one
// to an address named literally that the operator does not connect to.
type requestCheck struct {
	next           http.RoundTripper
	allowPlainHTTP bool
}

func (s requestCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := checkScheme(req.URL, s.allowPlainHTTP); err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	// An address named literally is refused here too: through a proxy (HTTPS_PROXY), the
	// dialer only sees the proxy's address.
	if ip, err := netip.ParseAddr(strings.Trim(req.URL.Hostname(), "[]")); err == nil {
		if why := refusedAddress(ip); why != "" {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, fmt.Errorf("%w: the store's endpoint is %s, %s; the operator does not connect there: set endpoint to the store's own address", ErrRefusedAddress, ip, why)
		}
	}
	return s.next.RoundTrip(req)
}

// checkScheme refuses an endpoint that is not HTTPS, unless plain HTTP is allowed.
func checkScheme(u *url.URL, allowPlainHTTP bool) error {
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && allowPlainHTTP:
		return nil
	case u.Scheme == "http":
		return fmt.Errorf("%w: the store's endpoint %s is plain HTTP, which would send the store's credentials and the backups unencrypted: use an https:// endpoint, or set allowPlainHTTP: true on the store if the network between the operator and the store is trusted", ErrPlainHTTP, u.Redacted())
	}
	return fmt.Errorf("%w: the store's endpoint %s is neither https:// nor http://", ErrPlainHTTP, u.Redacted())
}

// CheckEndpoint refuses, before any request, an endpoint that is not HTTPS when the store does
// not allow plain HTTP ("" is AWS S3 itself, over HTTPS).
func (s Store) CheckEndpoint() error {
	if s.Endpoint == "" {
		return nil
	}
	u, err := url.Parse(s.Endpoint)
	if err != nil {
		return fmt.Errorf("the store's endpoint %q is not a URL: %w", s.Endpoint, err)
	}
	return checkScheme(u, s.AllowPlainHTTP)
}

// notRetried keeps the SDK from retrying a request the guards above refused: the same
// request would be refused again, and the caller should get the reason at once.
func notRetried(err error) aws.Ternary {
	if errors.Is(err, ErrRefusedAddress) || errors.Is(err, ErrPlainHTTP) || errors.Is(err, ErrRedirect) {
		return aws.FalseTernary
	}
	return aws.UnknownTernary
}
