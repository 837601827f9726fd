// Package etcdkv reads what the API server stored in etcd, for tests that must see the bytes
// and not the API server's answer (which is converted to whatever version was asked for). It
// speaks etcd's JSON gateway (/v3/kv/range, on by default in etcd 3.x) over plain HTTP, as
// envtest's etcd serves it on loopback, so no etcd client library is needed.
package etcdkv

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Get returns the value stored at key, or an error when there is none.
func Get(ctx context.Context, endpoint, key string) ([]byte, error) {
	body, err := json.Marshal(map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(endpoint, "/")+"/v3/kv/range", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("etcd %s: %s: %s", endpoint, resp.Status, data)
	}
	var out struct {
		KVs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("etcd's answer for %s: %w", key, err)
	}
	if len(out.KVs) == 0 {
		return nil, fmt.Errorf("etcd holds nothing at %s", key)
	}
	return base64.StdEncoding.DecodeString(out.KVs[0].Value)
}

// StoredAPIVersion is the apiVersion a custom resource is stored in: the API server stores
// custom resources as JSON, in the CRD's storage version of the time it wrote them.
func StoredAPIVersion(ctx context.Context, endpoint, group, resource, namespace, name string) (string, error) {
	data, err := Get(ctx, endpoint, CustomResourceKey(group, resource, namespace, name))
	if err != nil {
		return "", err
	}
	var obj struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		return "", fmt.Errorf("the stored %s %s/%s is not JSON: %w", resource, namespace, name, err)
	}
	return obj.APIVersion, nil
}

// CustomResourceKey is where the API server (its default --etcd-prefix, /registry) keeps a
// namespaced custom resource.
func CustomResourceKey(group, resource, namespace, name string) string {
	return "/registry/" + group + "/" + resource + "/" + namespace + "/" + name
}
