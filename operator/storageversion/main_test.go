package storageversion_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/valkey-fsm/valkey-operator/internal/testapiserver"
)

// One API server for the package. Its CRDs are the chart's with the storage version put back
// to v1alpha1, as the previous release's CRDs stored it; tests switch it to v1beta1 as an
// upgrade does.
var server = testapiserver.Server{ServiceRange: "127.232.0.0/16"}

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	dir, err := os.MkdirTemp("", "storageversion-crds-")
	if err == nil {
		err = writeV1alpha1StoredCRDs(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "preparing the CRDs:", err)
		os.Exit(1)
	}
	server.CRDDir = dir
	code := m.Run()
	if err := server.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		code = 1
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// writeV1alpha1StoredCRDs writes the chart's CRDs into dir with v1alpha1 as storage version.
func writeV1alpha1StoredCRDs(dir string) error {
	src, err := filepath.Glob("../../charts/valkey-operator/files/crds/*.yaml")
	if err != nil || len(src) == 0 {
		return fmt.Errorf("the chart's CRDs: %v (%d files)", err, len(src))
	}
	for _, path := range src {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		setStorage(&crd, "v1alpha1")
		if data, err = yaml.Marshal(&crd); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(path)), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// setStorage makes version the CRD's storage version.
func setStorage(crd *apiextensionsv1.CustomResourceDefinition, version string) {
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == version
	}
}
