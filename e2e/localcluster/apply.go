package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// ApplyFile creates every object of a multi-document YAML file in namespace (for namespaced
// kinds without one), skipping objects that exist already. It returns the objects created.
func (c *Cluster) ApplyFile(ctx context.Context, path, namespace string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.cs.Discovery()))
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var created []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return created, nil
			}
			return created, fmt.Errorf("%s: %w", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return created, fmt.Errorf("%s: %s: %w", path, gvk, err)
		}
		ri := dyn.Resource(m.Resource)
		var res dynamic.ResourceInterface = ri
		if m.Scope.Name() == "namespace" {
			if obj.GetNamespace() == "" {
				obj.SetNamespace(namespace)
			}
			res = ri.Namespace(obj.GetNamespace())
		}
		out, err := res.Create(ctx, obj, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return created, fmt.Errorf("creating %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		created = append(created, out)
	}
}
