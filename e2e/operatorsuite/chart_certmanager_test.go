package operatorsuite

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// TestChartWebhooksWithCertManager installs the chart with conversionWebhook.certManager and
// webhooks.enabled (namespaced, crds.enabled=false: the suite owns the CRDs) against the local
// cluster's real cert-manager and cainjector: the chart's self-signed Issuer and Certificate
// are issued, cainjector fills both webhook configurations' caBundle with the Certificate's CA,
// the operator's pod serves that very certificate, and the API server, trusting only what
// cainjector wrote, calls the admission webhooks (a missing Secret refused, a default stored).
//
// The conversion webhook: the suite's CRDs convert through the suite, so they are not
// repointed. Instead a CRD of a test group of this test's own carries what the chart puts on
// its CRDs in this mode (the inject-ca-from annotation and the conversion clientConfig, taken
// from the chart rendered with crds.enabled=true), so cainjector fills its caBundle as it
// would the chart's CRDs'; reading one of its objects at its other version makes the API
// server call the operator's /convert through the chart's Service with that caBundle. The
// operator answers (and refuses: its scheme knows only valkey.fsm.dev's kinds), which shows
// the TLS path and the CA; converting a real ValkeyCluster this way is not exercised here.
func TestChartWebhooksWithCertManager(t *testing.T) {
	if cl == nil {
		t.Skip("no local cluster")
	}
	const opNS, release = "vo-certmanager", "vo-certmanager"
	const svc, injectFrom = release + "-webhook", opNS + "/" + release + "-webhook"
	ctx := ctxFor(t, 6*time.Minute)
	if err := cl.StartCertManager(ctx); err != nil {
		t.Fatalf("starting cert-manager: %v", err)
	}
	watched := cl.Namespace(t)
	values := []string{"--set", "conversionWebhook.certManager.enabled=true", "--set", "webhooks.enabled=true",
		"--set", "retryInterval=1s", "--set", "watchNamespaces={" + watched + "}",
		"--set", "journal.persistence.enabled=false", "--set", "journal.api.enabled=false", "--set", "replicas=1"}
	// --wait: the pod mounts the Certificate's Secret, so it runs only once cert-manager issued it.
	helm(t, append([]string{"install", release, "../../charts/valkey-operator", "--namespace", opNS, "--create-namespace",
		"--set", "crds.enabled=false", "--wait", "--timeout", "3m"}, values...)...)
	t.Cleanup(func() {
		helm(t, "uninstall", release, "--namespace", opNS, "--wait", "--timeout", "2m")
	})

	// cert-manager issued the chart's Certificate into the Secret the pod serves.
	var certificate *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		certificate = cmCertificate(t, ctx, opNS, svc)
		return certificate != nil && conditionTrue(certificate, "Ready"), nil
	})
	if err != nil {
		t.Fatalf("the chart's Certificate %s is not Ready: %v", injectFrom, certificate)
	}
	ca, leaf := secretCA(t, ctx, opNS, release+"-webhook-tls")
	secret, err := cl.Clientset().CoreV1().Secrets(opNS).Get(ctx, release+"-webhook-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	caPEM := secret.Data["ca.crt"]

	// cainjector filled every admission webhook's caBundle with that CA.
	admission := cl.Clientset().AdmissionregistrationV1()
	var mutating *admissionregistrationv1.MutatingWebhookConfiguration
	var validating *admissionregistrationv1.ValidatingWebhookConfiguration
	var bundles map[string][]byte
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		if mutating, err = admission.MutatingWebhookConfigurations().Get(ctx, release, metav1.GetOptions{}); err != nil {
			return false, nil
		}
		if validating, err = admission.ValidatingWebhookConfigurations().Get(ctx, release, metav1.GetOptions{}); err != nil {
			return false, nil
		}
		bundles = map[string][]byte{}
		for _, w := range mutating.Webhooks {
			bundles[w.Name] = w.ClientConfig.CABundle
		}
		for _, w := range validating.Webhooks {
			bundles[w.Name] = w.ClientConfig.CABundle
		}
		for _, b := range bundles {
			if !bytes.Equal(b, caPEM) {
				return false, nil
			}
		}
		return len(bundles) == 4, nil
	})
	if err != nil {
		summary := map[string]string{}
		for name, b := range bundles {
			summary[name] = fmt.Sprintf("%d bytes, the CA's: %t", len(b), bytes.Equal(b, caPEM))
		}
		t.Fatalf("cainjector did not fill the four admission webhooks' caBundle with the Certificate's CA: %v", summary)
	}

	// The pod serves the issued certificate, verified by that CA under the Service's name.
	var pods corev1.PodList
	if err := k.List(ctx, &pods, client.InNamespace(opNS)); err != nil || len(pods.Items) != 1 {
		t.Fatalf("the operator's pods in %s: %d, %v", opNS, len(pods.Items), err)
	}
	served := servedWebhookCertificate(t, pods.Items[0].Status.PodIP, ca.ClientConfig(svc+"."+opNS+".svc"))
	if !served.Equal(leaf) {
		t.Errorf("the pod serves serial %s, the Certificate's Secret holds %s", served.SerialNumber.Text(16), leaf.SerialNumber.Text(16))
	}

	// The API server, trusting only the injected caBundle, calls the admission webhooks.
	// The local cluster's API server reaches a pod through an ExternalName naming its address.
	if err := cl.PointServiceAtPod(ctx, opNS, svc, nil); err != nil {
		t.Fatal(err)
	}
	missing := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "nopw", Namespace: watched},
		Spec: v1beta1.ValkeyClusterSpec{Auth: v1beta1.AuthSpec{PasswordSecretRef: &v1beta1.SecretKeyRef{Name: "nope"}}}}
	const refusal = "which does not exist"
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = k.Create(ctx, missing.DeepCopy(), client.DryRunAll)
		return last != nil && strings.Contains(last.Error(), "Secret "+watched+"/nope, "+refusal), nil
	})
	if err != nil {
		t.Fatalf("a cluster naming a missing Secret: %v, want the operator's refusal through cert-manager's certificate", last)
	}
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "defaulted", Namespace: watched}, Spec: v1beta1.ValkeyClusterSpec{Topology: v1beta1.TopologyStandalone}}
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	stored := &v1beta1.ValkeyCluster{}
	if err := k.Get(ctx, client.ObjectKeyFromObject(vc), stored); err != nil {
		t.Fatal(err)
	}
	if stored.Spec.Replicas == nil || *stored.Spec.Replicas != 0 || stored.Spec.Storage.Size == nil || stored.Spec.Storage.Size.String() != "10Gi" {
		t.Errorf("a Standalone cluster is stored with replicas %v and storage.size %v, want the mutating webhook's 0 and 10Gi",
			ptr.Deref(stored.Spec.Replicas, -1), stored.Spec.Storage.Size)
	}
	// Deleted while the operator runs, so that its finalizer goes before the release does.
	if err := k.Delete(ctx, stored); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		last = k.Get(ctx, client.ObjectKeyFromObject(vc), stored)
		return apierrors.IsNotFound(last), nil
	})
	if err != nil {
		t.Fatalf("the defaulted cluster is not deleted: %v", last)
	}

	checkConversionThroughInjectedCA(t, ctx, opNS, release, watched, caPEM, values)
}

// checkConversionThroughInjectedCA creates a CRD of a test group carrying what the chart puts
// on its CRDs with cert-manager (rendered with crds.enabled=true and the same values), waits
// for cainjector to fill its caBundle with the Certificate's CA, and reads one of its objects
// at its other version (the object goes with the CRD): the API server calls the operator's /convert with that caBundle, and
// the operator's own answer (a refusal of a kind it does not know) comes back.
func checkConversionThroughInjectedCA(t *testing.T, ctx context.Context, opNS, release, ns string, caPEM []byte, values []string) {
	t.Helper()
	// helm template does not ask the cluster its version unless told: the local cluster's.
	version, err := cl.Clientset().Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	rendered := helm(t, append([]string{"template", release, "../../charts/valkey-operator", "--namespace", opNS,
		"--kube-version", version.GitVersion, "--set", "crds.enabled=true"}, values...)...)
	chartCRD := renderedCRD(t, rendered, "valkeyclusters.valkey.fsm.dev")
	annotation := chartCRD.Annotations["cert-manager.io/inject-ca-from"]
	if annotation != opNS+"/"+release+"-webhook" {
		t.Fatalf("the chart's CRD asks cainjector for %q, want the webhook's Certificate %s/%s-webhook", annotation, opNS, release)
	}
	conv := chartCRD.Spec.Conversion
	if conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil || conv.Webhook.ClientConfig.Service == nil || len(conv.Webhook.ClientConfig.CABundle) != 0 {
		t.Fatalf("the chart's CRD converts with %+v, want the webhook's Service and no caBundle of the chart's", conv)
	}

	const group, plural = "certmanager-probe.e2e.valkey.fsm.dev", "probes"
	schemaAny := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group, Annotations: map[string]string{"cert-manager.io/inject-ca-from": annotation}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: "probe", Kind: "Probe", ListKind: "ProbeList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schemaAny},
				{Name: "v2", Served: true, Schema: schemaAny},
			},
			Conversion: conv.DeepCopy(),
		},
	}
	crds := apiextensionsclient.NewForConfigOrDie(cl.RESTConfig()).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := ctxFor(t, time.Minute)
		if err := crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the probe CRD: %v", err)
		}
	})
	var got *apiextensionsv1.CustomResourceDefinition
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		if got, err = crds.Get(ctx, crd.Name, metav1.GetOptions{}); err != nil {
			return false, nil
		}
		established := false
		for _, c := range got.Status.Conditions {
			established = established || c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
		}
		return established && bytes.Equal(got.Spec.Conversion.Webhook.ClientConfig.CABundle, caPEM), nil
	})
	if err != nil {
		t.Fatalf("cainjector did not fill a CRD annotated as the chart's with the Certificate's CA: %+v", got.Spec.Conversion.Webhook.ClientConfig)
	}

	dyn := dynamic.NewForConfigOrDie(cl.RESTConfig())
	probe := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Probe", "metadata": map[string]any{"name": "p", "namespace": ns}}}
	v1 := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}).Namespace(ns)
	v2 := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v2", Resource: plural}).Namespace(ns)
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = v1.Create(ctx, probe, metav1.CreateOptions{})
		return last == nil || apierrors.IsAlreadyExists(last), nil
	})
	if err != nil {
		t.Fatalf("creating a probe at its storage version: %v", last)
	}
	// A TLS failure reads "x509: certificate signed by unknown authority"; the operator's
	// conversion handler, reached, names the kind its scheme lacks.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = v2.Get(ctx, "p", metav1.GetOptions{})
		return last != nil && strings.Contains(last.Error(), `no kind "Probe" is registered`), nil
	})
	if err != nil {
		t.Fatalf("reading a probe at v2: %v, want the operator's /convert answering through the injected caBundle", last)
	}
}

// renderedCRD finds the CustomResourceDefinition called name in a rendered chart.
func renderedCRD(t *testing.T, rendered, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(rendered), 4096)
	for {
		var crd apiextensionsv1.CustomResourceDefinition
		err := dec.Decode(&crd)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if crd.Kind == "CustomResourceDefinition" && crd.Name == name {
			return &crd
		}
	}
	t.Fatalf("the rendered chart has no CRD %s", name)
	return nil
}

// servedWebhookCertificate is the certificate the operator's pod at ip serves on its webhook
// port, verified with cfg.
func servedWebhookCertificate(t *testing.T, ip string, cfg *tls.Config) *x509.Certificate {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", net.JoinHostPort(ip, "9443"), cfg)
	if err != nil {
		t.Fatalf("the operator's webhook at %s: %v", ip, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// conditionTrue says whether an object's status condition of type typ is True.
func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, x := range conds {
		if m, _ := x.(map[string]any); m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}
