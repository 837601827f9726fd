package operatorsuite

import (
	"bytes"
	"context"
	"testing"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/e2e/valkeyapi"
)

// crdNames are the CRDs the operator's chart manages.
var crdNames = []string{"valkeyclusters.valkey.fsm.dev", "valkeybackups.valkey.fsm.dev", "valkeyacls.valkey.fsm.dev"}

// leaveCRDsAsAnOlderChartDid makes the suite's CRDs look as a chart that shipped them in crds/
// left them (no conversion webhook, not owned by a release), so that a chart installed with
// --take-ownership takes them over as `helm upgrade --take-ownership` does from such a chart.
// When the test ends (after the chart is uninstalled: register this first) they are the
// suite's again, converting through this process.
func leaveCRDsAsAnOlderChartDid(t *testing.T) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	cs := apiextensionsclient.NewForConfigOrDie(cl.RESTConfig())
	for _, name := range crdNames {
		patch := []byte(`{"spec":{"conversion":{"strategy":"None","webhook":null}}}`)
		if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if _, err := valkeyapi.Install(cl); err != nil {
			t.Errorf("giving the CRDs back to the suite's conversion webhook: %v", err)
		}
	})
}

// checkChartConvertsCRDs checks that the chart's release in ns serves the CRDs' conversion:
// every CRD names its webhook Service and the CA of its certificate Secret, and (once the
// Service reaches the pod, see pointJournalServiceAtPod) a v1alpha1 object is converted to
// the stored v1beta1 by the operator's pod.
func checkChartConvertsCRDs(t *testing.T, ns, release, tns string) {
	t.Helper()
	ctx := ctxFor(t, 2*time.Minute)
	secret, err := cl.Clientset().CoreV1().Secrets(ns).Get(ctx, release+"-webhook-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs := apiextensionsclient.NewForConfigOrDie(cl.RESTConfig())
	for _, name := range crdNames {
		crd, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := crd.Spec.Conversion
		if c == nil || c.Webhook == nil || c.Webhook.ClientConfig == nil || c.Webhook.ClientConfig.Service == nil ||
			c.Webhook.ClientConfig.Service.Name != release+"-webhook" || !bytes.Equal(c.Webhook.ClientConfig.CABundle, secret.Data["ca.crt"]) {
			t.Fatalf("%s does not convert through the chart's webhook and CA: %+v", name, c)
		}
		if crd.Annotations["helm.sh/resource-policy"] != "keep" {
			t.Errorf("%s is not kept when the release is uninstalled: %v", name, crd.Annotations)
		}
	}
	if err := cl.PointServiceAtPod(ctx, ns, release+"-webhook", nil); err != nil {
		t.Fatal(err)
	}
	// A dry-run create is converted to the stored version like any other: once it passes,
	// the API server reaches the pod's webhook and trusts its certificate.
	probe := newCluster(tns, "conversion-probe", v1alpha1.TopologyReplication, 3)
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = k.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("v1alpha1 is not converted through the chart's webhook: %v", last)
	}
}
