// Command release builds the kubectl plugin's release (make release): kubectl-valkey for every
// platform krew users run (linux, darwin, windows; amd64, arm64), each stamped with the version
// and packed with the LICENSE into a reproducible archive (tar.gz, zip for windows), their
// sha256 in checksums.txt, and the krew manifest plugins/valkey.yaml that names them. Given
// krew's binaries (hack/krew.sh) it then checks the manifest as krew's index does
// (validate-krew-manifest) and installs every platform's archive with `krew install --manifest
// --archive`, as a user's krew would.
package main
