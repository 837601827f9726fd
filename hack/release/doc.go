// Command release builds everything a release publishes (make release VERSION=vX.Y.Z) into one
// directory, dist/release:
//
//   - the operator's multi-platform image, built by hack/image (an OCI layout in image/oci and
//     the archive valkey-operator-image_VERSION.oci.tar), tagged
//     ghcr.io/valkey-fsm/valkey-operator:VERSION and pushed when asked (-image-push);
//   - both charts packaged (valkey-operator-X.Y.Z.tgz, valkey-cluster-X.Y.Z.tgz) with the
//     release's version as appVersion, so that the operator chart's default image is the
//     release's image, and pushed as OCI artifacts when asked (-chart-push
//     oci://ghcr.io/valkey-fsm/charts);
//   - the CRDs as one file, valkey-operator-crds.yaml, for kubectl apply;
//   - kubectl-valkey for every platform krew users run (linux, darwin, windows; amd64, arm64),
//     each packed with the LICENSE into an archive (tar.gz, zip for windows), and the krew
//     manifest plugins/valkey.yaml that names them;
//   - an SPDX 2.3 SBOM (valkey-operator_VERSION.spdx.json) of the operator's and the plugin's
//     binaries: the Go modules each links, with versions and go.sum hashes, read from the
//     binaries' own build information;
//   - checksums.txt, the sha256 of every file above (sha256sum -c checks it).
//
// Every file is reproducible: the binaries are built with -trimpath and without cgo, archives
// and chart packages carry the commit's time (SOURCE_DATE_EPOCH wins) instead of the build's,
// so two builds of one commit give the same bytes. Given krew's binaries (hack/krew.sh) it then
// checks the manifest as krew's index does (validate-krew-manifest) and installs every
// platform's archive with `krew install --manifest --archive`, as a user's krew would.
package main
