// Package celtest proves the v1beta1 CRDs' new validation rules against a real
// kube-apiserver (envtest, with the Kubernetes binaries the local cluster uses): each refuses
// what it should with the message users will read and accepts what it should, and the scale
// subresource reads and writes spec.replicas.
//
// v1beta1 is not in the chart's CRDs until the operator serves the conversion webhook, so the
// tests generate its CRDs with the project's pinned controller-gen (hack/controller-gen.sh
// crds) into a temporary directory and install them alone. The rules v1beta1 copies from
// v1alpha1 are tested in apis/v1alpha1/celtest.
package celtest
