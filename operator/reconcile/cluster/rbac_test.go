package cluster

import (
	"os"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// TestTheOperatorMayNotDeleteSecrets reads the role the chart installs (generated from this
// package's rbac markers): it grants no delete (nor deletecollection, nor *) on Secrets. With
// it, the operator's ServiceAccount could delete every Secret in its reach, cluster-wide in
// the default install; a completed rotation's Secret is emptied instead (kube.EmptyRotation).
func TestTheOperatorMayNotDeleteSecrets(t *testing.T) {
	data, err := os.ReadFile("../../../charts/valkey-operator/files/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatal(err)
	}
	if len(role.Rules) == 0 {
		t.Fatal("the generated role has no rules")
	}
	for _, r := range role.Rules {
		if !slices.Contains(r.APIGroups, "") && !slices.Contains(r.APIGroups, "*") {
			continue
		}
		if !slices.Contains(r.Resources, "secrets") && !slices.Contains(r.Resources, "*") {
			continue
		}
		for _, v := range r.Verbs {
			if v == "delete" || v == "deletecollection" || v == "*" {
				t.Errorf("the chart's role grants %s on secrets (%+v): the operator must not be able to delete Secrets", v, r)
			}
		}
	}
}
