package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestConvert: Kubernetes' extensions go, int-or-string becomes anyOf, nullable a "null" type,
// OpenAPI-only formats go, and objects that list their properties are closed, unless they say
// otherwise; property names that are also keywords (type, properties) are names.
func TestConvert(t *testing.T) {
	in := `
type: object
x-kubernetes-validations: [{rule: "self.a > 0", message: m}]
required: [type]
properties:
  type: {type: string, enum: [A, B]}
  properties: {type: integer, format: int32, minimum: 1}
  size: {x-kubernetes-int-or-string: true, pattern: "^[0-9]+$"}
  quantity: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
  when: {type: string, format: date-time, nullable: true}
  labels: {type: object, additionalProperties: {type: string}, x-kubernetes-map-type: atomic}
  free: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: string}}}
  list:
    type: array
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [name]
    items: {type: object, required: [name], properties: {name: {type: string}}}
`
	want := `
type: object
required: [type]
additionalProperties: false
properties:
  type: {type: string, enum: [A, B]}
  properties: {type: integer, minimum: 1}
  size: {anyOf: [{type: integer}, {type: string}], pattern: "^[0-9]+$"}
  quantity: {anyOf: [{type: integer}, {type: string}]}
  when: {type: [string, "null"], format: date-time}
  labels: {type: object, additionalProperties: {type: string}}
  free: {type: object, properties: {a: {type: string}}}
  list:
    type: array
    items: {type: object, required: [name], additionalProperties: false, properties: {name: {type: string}}}
`
	var s, w map[string]any
	if err := yaml.Unmarshal([]byte(in), &s); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if got := convert(s); !reflect.DeepEqual(got, w) {
		g, _ := yaml.Marshal(got)
		t.Errorf("convert:\n%s\nwant:\n%s", g, want)
	}
}

// TestInfer: types from the defaults, objects closed; labels, empty maps and Kubernetes' own
// values open.
func TestInfer(t *testing.T) {
	s, err := operatorSchema([]byte(`
replicas: 2
ratio: 0.5
name: x
enabled: true
list: [a]
metrics: {port: 1, labels: {a: b}, extra: {}}
resources: {limits: {memory: 1Gi}}
`))
	if err != nil {
		t.Fatal(err)
	}
	props := s["properties"].(map[string]any)
	for key, want := range map[string]string{"replicas": "integer", "ratio": "number", "name": "string", "enabled": "boolean", "list": "array", "metrics": "object", "resources": "object", "global": "object"} {
		if got := props[key].(map[string]any)["type"]; got != want {
			t.Errorf("%s: type %v, want %s", key, got, want)
		}
	}
	if s["additionalProperties"] != false || props["metrics"].(map[string]any)["additionalProperties"] != false {
		t.Error("the top level and metrics are not closed")
	}
	metrics := props["metrics"].(map[string]any)["properties"].(map[string]any)
	if _, ok := metrics["labels"].(map[string]any)["additionalProperties"].(map[string]any); !ok {
		t.Error("metrics.labels is not a map of strings")
	}
	for name, sub := range map[string]any{"metrics.extra": metrics["extra"], "resources": props["resources"]} {
		if _, closed := sub.(map[string]any)["additionalProperties"]; closed {
			t.Errorf("%s is closed", name)
		}
	}
}

// TestTheSchemasAreUpToDate: the committed files are what the generator writes from the CRDs
// and values.yaml as they are (make verify-generate checks the same in CI).
func TestTheSchemasAreUpToDate(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what hack/chartschema writes: run make generate", path)
		}
	}
}
