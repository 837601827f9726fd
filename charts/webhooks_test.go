package charts

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The admission webhooks are off by default; on, their caBundle is the CA the conversion
// webhook's (the chart-made certificate, or cert-manager's injection from the same
// Certificate), and in namespaced mode they apply only in the watched namespaces.
func TestTheAdmissionWebhooksShareTheConversionCertificate(t *testing.T) {
	webhookObjects := func(values string) (mutating []admissionregistrationv1.MutatingWebhookConfiguration, validating []admissionregistrationv1.ValidatingWebhookConfiguration, crdCA []byte, rendered []object) {
		out, err := render(t, "valkey-operator", valuesFile(t, values))
		if err != nil {
			t.Fatalf("helm template: %v\n%s", err, out)
		}
		rendered = objects(t, out)
		for _, o := range rendered {
			switch o.Kind {
			case "MutatingWebhookConfiguration":
				var m admissionregistrationv1.MutatingWebhookConfiguration
				if err := yaml.UnmarshalStrict(o.raw, &m); err != nil {
					t.Fatal(err)
				}
				mutating = append(mutating, m)
			case "ValidatingWebhookConfiguration":
				var v admissionregistrationv1.ValidatingWebhookConfiguration
				if err := yaml.UnmarshalStrict(o.raw, &v); err != nil {
					t.Fatal(err)
				}
				validating = append(validating, v)
			case "CustomResourceDefinition":
				var crd apiextensionsv1.CustomResourceDefinition
				if err := yaml.Unmarshal(o.raw, &crd); err != nil {
					t.Fatal(err)
				}
				crdCA = crd.Spec.Conversion.Webhook.ClientConfig.CABundle
			}
		}
		return mutating, validating, crdCA, rendered
	}
	each := func(mutating []admissionregistrationv1.MutatingWebhookConfiguration, validating []admissionregistrationv1.ValidatingWebhookConfiguration, f func(name string, cc admissionregistrationv1.WebhookClientConfig, sel *metav1.LabelSelector)) {
		for _, m := range mutating {
			for _, w := range m.Webhooks {
				f(w.Name, w.ClientConfig, w.NamespaceSelector)
			}
		}
		for _, v := range validating {
			for _, w := range v.Webhooks {
				f(w.Name, w.ClientConfig, w.NamespaceSelector)
			}
		}
	}

	if m, v, _, _ := webhookObjects("{}"); len(m)+len(v) != 0 {
		t.Errorf("the defaults render %d webhook configurations, want none (opt-in)", len(m)+len(v))
	}

	m, v, crdCA, _ := webhookObjects("webhooks: {enabled: true}\nwatchNamespaces: [shop-a, shop-b]\n")
	if len(m) != 1 || len(v) != 1 || len(crdCA) == 0 {
		t.Fatalf("webhooks.enabled renders %d mutating and %d validating configurations (CRD caBundle %d bytes), want one each", len(m), len(v), len(crdCA))
	}
	each(m, v, func(name string, cc admissionregistrationv1.WebhookClientConfig, sel *metav1.LabelSelector) {
		if string(cc.CABundle) != string(crdCA) {
			t.Errorf("%s: caBundle is not the CA in the CRDs' conversion webhook", name)
		}
		if cc.Service == nil || cc.Service.Name != "x-webhook" || cc.Service.Namespace != "shop" {
			t.Errorf("%s: served by %+v, want the conversion webhook's Service shop/x-webhook", name, cc.Service)
		}
		if sel == nil || !strings.Contains(sel.String(), "shop-a") || !strings.Contains(sel.String(), "shop-b") {
			t.Errorf("%s: namespaceSelector %s, want the watched namespaces only", name, sel)
		}
	})

	m, v, _, rendered := webhookObjects("webhooks: {enabled: true}\nconversionWebhook: {certManager: {enabled: true}}\n")
	each(m, v, func(name string, cc admissionregistrationv1.WebhookClientConfig, sel *metav1.LabelSelector) {
		if len(cc.CABundle) != 0 {
			t.Errorf("%s: a caBundle of the chart's while cert-manager injects it", name)
		}
		if sel != nil {
			t.Errorf("%s: namespaceSelector %s without watchNamespaces, want none", name, sel)
		}
	})
	for _, o := range rendered {
		if strings.HasSuffix(o.Kind, "WebhookConfiguration") && o.Metadata.Annotations["cert-manager.io/inject-ca-from"] != "shop/x-webhook" {
			t.Errorf("%s: inject-ca-from %q, want shop/x-webhook (the conversion webhook's Certificate)", o.Kind, o.Metadata.Annotations["cert-manager.io/inject-ca-from"])
		}
	}
}
