package manager

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// access decides who may read the operator's endpoints by asking the API server, as the API
// server itself would: a TokenReview says who the bearer token belongs to, a
// SubjectAccessReview whether that user may do what the request needs (a Role or ClusterRole
// of theirs). Answers are kept for a minute per token and question, so that a scrape every
// few seconds costs the API server two requests a minute, not two per scrape. It is our own
// (rather than controller-runtime's metrics filter) because that filter pulls k8s.io/apiserver
// and its CEL, gRPC and tracing dependencies into the operator for two API calls.
type access struct {
	cs  kubernetes.Interface
	now func() time.Time
	ttl time.Duration

	mu      sync.Mutex
	answers map[[32]byte]answer
}

type answer struct {
	user    string
	allowed bool
	err     error
	at      time.Time
}

// maxAnswers bounds the cache of answers.
const maxAnswers = 4096

func newAccess(cs kubernetes.Interface) *access {
	return &access{cs: cs, now: time.Now, ttl: time.Minute, answers: map[[32]byte]answer{}}
}

// errNoToken is a request without a bearer token.
var errNoToken = errors.New("no bearer token: send Authorization: Bearer <token> (kubectl create token <serviceaccount>)")

// check answers whether the request's bearer token belongs to a user the API server allows to
// do what attrs say; the user's name comes back for the log. A nil attrs.ResourceAttributes
// with a NonResourceAttributes asks about a URL such as /metrics.
func (a *access) check(ctx context.Context, req *http.Request, attrs authorizationv1.SubjectAccessReviewSpec) (user string, allowed bool, err error) {
	token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return "", false, errNoToken
	}
	key := sha256.New()
	key.Write([]byte(token))
	if attrs.ResourceAttributes != nil {
		r := attrs.ResourceAttributes
		key.Write([]byte("\x00" + r.Verb + "\x00" + r.Group + "\x00" + r.Resource + "\x00" + r.Subresource + "\x00" + r.Namespace + "\x00" + r.Name))
	}
	if attrs.NonResourceAttributes != nil {
		key.Write([]byte("\x01" + attrs.NonResourceAttributes.Verb + "\x00" + attrs.NonResourceAttributes.Path))
	}
	var k [32]byte
	copy(k[:], key.Sum(nil))
	a.mu.Lock()
	if ans, ok := a.answers[k]; ok && a.now().Sub(ans.at) < a.ttl {
		a.mu.Unlock()
		return ans.user, ans.allowed, ans.err
	}
	a.mu.Unlock()
	ans := a.ask(ctx, token, attrs)
	ans.at = a.now()
	a.mu.Lock()
	// Bounded: expired answers go when the map grows, and past maxAnswers nothing more is
	// kept (each new token is then asked about, as without a cache). Answers for tokens the
	// API server does not know are never kept: random tokens would fill the map.
	if len(a.answers) >= maxAnswers/2 {
		for key, old := range a.answers {
			if a.now().Sub(old.at) >= a.ttl {
				delete(a.answers, key)
			}
		}
	}
	if ans.err == nil && ans.user != "" && len(a.answers) < maxAnswers {
		a.answers[k] = ans
	}
	a.mu.Unlock()
	return ans.user, ans.allowed, ans.err
}

func (a *access) ask(ctx context.Context, token string, attrs authorizationv1.SubjectAccessReviewSpec) answer {
	review, err := a.cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return answer{err: err}
	}
	if !review.Status.Authenticated {
		return answer{allowed: false}
	}
	u := review.Status.User
	attrs.User, attrs.Groups, attrs.UID = u.Username, u.Groups, u.UID
	if len(u.Extra) > 0 {
		attrs.Extra = map[string]authorizationv1.ExtraValue{}
		for k, v := range u.Extra {
			attrs.Extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	sar, err := a.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: attrs}, metav1.CreateOptions{})
	if err != nil {
		return answer{user: u.Username, err: err}
	}
	return answer{user: u.Username, allowed: sar.Status.Allowed}
}

// deny writes the refusal: 401 without a valid token, 403 without the right, 503 when the API
// server could not be asked.
func deny(w http.ResponseWriter, user string, err error, what string) {
	switch {
	case errors.Is(err, errNoToken):
		http.Error(w, err.Error(), http.StatusUnauthorized)
	case err != nil:
		http.Error(w, "cannot ask the API server who may read this: "+err.Error(), http.StatusServiceUnavailable)
	case user == "":
		http.Error(w, "the API server does not know this token", http.StatusUnauthorized)
	default:
		http.Error(w, user+" may not "+what, http.StatusForbidden)
	}
}
