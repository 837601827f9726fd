package manager

import (
	"net/http"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The metrics endpoint asks the API server who the caller is and whether it may read
// /metrics (see access): the operator's metrics name every cluster and namespace it manages,
// which is not for every pod to read. Prometheus needs a ClusterRole with
// nonResourceURLs: ["/metrics"], verbs: ["get"] (the chart's <release>-metrics-reader).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsOptions serves the metrics over plain HTTP to anyone only when asked to
// (--metrics-secure=false).
func metricsOptions(c Config) metricsserver.Options {
	o := metricsserver.Options{BindAddress: c.MetricsAddr}
	if c.MetricsSecure {
		o.SecureServing = true
		o.CertDir = c.MetricsCertDir
		o.FilterProvider = metricsFilter
	}
	return o
}

// metricsFilter lets through the callers the API server allows to get the path.
func metricsFilter(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	a := newAccess(cs)
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			user, ok, err := a.check(req.Context(), req, authorizationv1.SubjectAccessReviewSpec{
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: req.URL.Path},
			})
			if !ok {
				log.V(1).Info("metrics request refused", "user", user, "path", req.URL.Path, "error", err)
				deny(w, user, err, "get "+req.URL.Path)
				return
			}
			next.ServeHTTP(w, req)
		}), nil
	}, nil
}
