package celtest

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestValkeyACLValidation: a ValkeyACL the API server can tell is wrong is refused with what to
// change: the operator's own user names, a name Valkey would not take, no rules, rules that
// switch the user or set passwords (the resource's fields do), rules with spaces (each rule an
// item), rules with quotes (the users' file would not be readable), no password or more than
// two; cluster and user are immutable; enabled and a Secret's key are defaulted.
func TestValkeyACLValidation(t *testing.T) {
	acls := apiServer(t).Resource(v1alpha1.SchemeGroupVersion.WithResource("valkeyacls")).Namespace(namespace(t))
	ctx := context.Background()
	const pw = "passwordSecrets: [{name: app-pw}]"
	cases := []struct{ name, spec, want string }{
		{"good", "{cluster: prod, user: app, rules: ['~app:*', '+@read', '+@write'], " + pw + "}", ""},
		{"the operator's user", "{cluster: prod, user: operator, rules: ['+@read'], " + pw + "}", "the operator's own users"},
		{"the application user", "{cluster: prod, user: Default, rules: ['+@read'], " + pw + "}", "the operator's own users"},
		{"the readiness probe's user", "{cluster: prod, user: probe, rules: ['+@read'], " + pw + "}", "the operator's own users"},
		{"a name with a space", "{cluster: prod, user: 'my app', rules: ['+@read'], " + pw + "}", "spec.user in body should match"},
		{"no rules", "{cluster: prod, user: app, rules: [], " + pw + "}", "spec.rules: Invalid value: 0"},
		{"switched on in the rules", "{cluster: prod, user: app, rules: ['on', '+@read'], " + pw + "}", "a rule must not switch the user on or off or set passwords"},
		{"a password in the rules", "{cluster: prod, user: app, rules: ['>secret', '+@read'], " + pw + "}", "a rule must not switch the user on or off or set passwords"},
		{"nopass", "{cluster: prod, user: app, rules: ['NOPASS'], " + pw + "}", "a rule must not switch the user on or off or set passwords"},
		{"two rules in one item", "{cluster: prod, user: app, rules: ['+@read +@write'], " + pw + "}", "should match '^\\S+$'"},
		{"a line break", "{cluster: prod, user: app, rules: [\"+@read\\nuser evil on nopass +@all\"], " + pw + "}", "should match '^\\S+$'"},
		{"a double quote", "{cluster: prod, user: app, rules: ['~app:\"x', '+@read'], " + pw + "}", "a rule must not hold a quote"},
		{"a single quote", "{cluster: prod, user: app, rules: [\"~it's\", '+@read'], " + pw + "}", "a rule must not hold a quote"},
		{"no password", "{cluster: prod, user: app, rules: ['+@read'], passwordSecrets: []}", "spec.passwordSecrets: Invalid value: 0"},
		{"three passwords", "{cluster: prod, user: app, rules: ['+@read'], passwordSecrets: [{name: a}, {name: b}, {name: c}]}", "must have at most 2 items"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := acls.Create(ctx, aclObject(t, fmt.Sprintf("acl-%d", i), c.spec), metav1.CreateOptions{})
			check(t, err, c.want)
		})
	}
	created, err := acls.Create(ctx, aclObject(t, "immutable", "{cluster: prod, user: app2, rules: ['+@read'], "+pw+"}"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if on, _, _ := unstructured.NestedBool(created.Object, "spec", "enabled"); !on {
		t.Error("spec.enabled not defaulted to true")
	}
	if refs, _, _ := unstructured.NestedSlice(created.Object, "spec", "passwordSecrets"); len(refs) != 1 || refs[0].(map[string]any)["key"] != "password" {
		t.Errorf("passwordSecrets %v: want the key defaulted to password", refs)
	}
	for field, want := range map[string]string{"cluster": "cluster is immutable", "user": "user is immutable"} {
		edited := created.DeepCopy()
		if err := unstructured.SetNestedField(edited.Object, "other", "spec", field); err != nil {
			t.Fatal(err)
		}
		_, err = acls.Update(ctx, edited, metav1.UpdateOptions{})
		check(t, err, want)
	}
}

func aclObject(t *testing.T, name, spec string) *unstructured.Unstructured {
	t.Helper()
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "ValkeyACL",
		"metadata": map[string]any{"name": name}, "spec": parseYAML(t, spec),
	}}
}
