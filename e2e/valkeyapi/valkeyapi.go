package valkeyapi

import (
	"context"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
)

// Install applies the chart's CRDs to c and returns a typed client once its kinds are served
// (listable).
func Install(c *localcluster.Cluster) (client.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, err := kubeassets.RepoRoot()
	if err != nil {
		return nil, err
	}
	crds, err := filepath.Glob(filepath.Join(root, "charts/valkey-operator/crds/*.yaml"))
	if err != nil {
		return nil, err
	}
	for _, crd := range crds {
		if _, err := c.ApplyFile(ctx, crd, ""); err != nil {
			return nil, err
		}
	}
	k, err := client.New(c.RESTConfig(), client.Options{Scheme: manager.Scheme()})
	if err != nil {
		return nil, err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return k.List(ctx, &v1alpha1.ValkeyClusterList{}) == nil && k.List(ctx, &v1alpha1.ValkeyBackupList{}) == nil, nil
	})
	return k, err
}
