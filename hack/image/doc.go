// Command image builds the operator's OCI image without Docker (make image): an empty base
// (scratch) and one layer per platform holding /valkey-operator, a static binary built with
// CGO_ENABLED=0, -trimpath and the version stamp (internal/version). Every input that could
// differ between two builds of the same tree is fixed (file times, owners, order, the creation
// time taken from the commit), so the same commit gives the same digest on any machine with the
// same Go.
//
// It writes an OCI image layout (OUT/oci: the index of every platform, tagged with the
// chart's image reference) and the same layout as one tar file (OUT/valkey-operator.oci.tar,
// an "oci-archive" for skopeo, podman or crane), and pushes the index when asked
// (-push / IMAGE_PUSH, credentials from the Docker config as docker login writes them).
//
// The reference defaults to the chart's (charts/valkey-operator: values.yaml image.repository,
// and image.tag else the chart's appVersion), so that `helm install` pulls what this builds.
// The local cluster runs the operator from the layout (e2e/localcluster/operatorimage.go).
package main
