package valkeyapi

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
	"github.com/valkey-fsm/valkey-operator/internal/testapiserver"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
)

// conversion is the conversion webhook this process serves for its local cluster's CRDs, from
// the first Install until the process ends (Install again reuses it).
var conversion struct {
	once sync.Once
	opts envtest.WebhookInstallOptions
	err  error
}

// Install applies the chart's CRDs to c and returns a typed client once its kinds are served
// (listable). The CRDs store v1beta1 and convert through the operator's conversion webhook,
// which this process serves on loopback for as long as it runs (the suites start and stop
// in-process operators, and SIGKILL operator pods, but v1alpha1 must be served throughout);
// their spec.conversion names it and its CA. A chart that takes the CRDs over points them at
// its own operator; Install again points them back here.
func Install(c *localcluster.Cluster) (client.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, err := kubeassets.RepoRoot()
	if err != nil {
		return nil, err
	}
	conversion.once.Do(func() {
		conversion.opts.LocalServingHost = "127.0.0.1"
		if conversion.err = conversion.opts.PrepWithoutInstalling(); conversion.err != nil {
			return
		}
		if conversion.err = moveCertsInto(&conversion.opts, filepath.Join(c.Dir(), "conversion-webhook")); conversion.err != nil {
			return
		}
		_, conversion.err = testapiserver.ServeConversion(&conversion.opts)
	})
	if conversion.err != nil {
		return nil, conversion.err
	}
	_, err = envtest.InstallCRDs(c.RESTConfig(), envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root, "charts/valkey-operator/files/crds")}, ErrorIfPathMissing: true,
		Scheme: manager.Scheme(), WebhookOptions: conversion.opts,
	})
	if err != nil {
		return nil, err
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

// moveCertsInto moves the webhook's certificate and key from the temporary directory envtest
// made into dir, in the cluster's directory, which goes with the cluster's other files.
func moveCertsInto(opts *envtest.WebhookInstallOptions, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		data, err := os.ReadFile(filepath.Join(opts.LocalServingCertDir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(opts.LocalServingCertDir); err != nil {
		return err
	}
	opts.LocalServingCertDir = dir
	return nil
}
