package kube

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorkube "github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// The plugin's copies of the operator's names are what the operator really uses: a rename
// there would otherwise send cli and report to objects that do not exist.
func TestObjectsMirrorTheOperator(t *testing.T) {
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "prod"}}
	names := operatorkube.NamesOf(vc)
	for _, c := range []struct{ what, plugin, operator string }{
		{"cluster label", LabelCluster, operatorkube.LabelCluster},
		{"TLS annotation", AnnotationTLS, operatorkube.AnnotationTLS},
		{"auth Secret", AuthSecret("cache"), names.Auth},
		{"rotation Secret", RotationSecret("cache"), operatorkube.RotationSecretName(vc)},
		{"client password key", KeyClientPassword, operatorkube.KeyClientPassword},
		{"operator password key", KeyOperatorPassword, operatorkube.KeyOperatorPassword},
		{"client user", UserClient, valkey.UserClient},
		{"operator user", UserOperator, valkey.UserOperator},
		{"TLS directory", TLSDir, valkey.TLSDir},
	} {
		if c.plugin != c.operator {
			t.Errorf("%s: the plugin says %q, the operator %q", c.what, c.plugin, c.operator)
		}
	}
	if Port != valkey.Port || TLSPort != valkey.TLSPort {
		t.Errorf("ports: the plugin says %d/%d, the operator %d/%d", Port, TLSPort, valkey.Port, valkey.TLSPort)
	}
	if got := operatorkube.SelectorLabels(vc)[LabelCluster]; got != "cache" {
		t.Errorf("the pods' selector labels %v lack %s=cache", operatorkube.SelectorLabels(vc), LabelCluster)
	}
	v1beta1.SetDefaults(&vc.Spec)
	d := operatorkube.Build(vc, metav1.OwnerReference{})
	if c := d.StatefulSet.Spec.Template.Spec.Containers[0].Name; c != Container {
		t.Errorf("the Valkey container is %q, the plugin execs in %q", c, Container)
	}
}
