// Package installpaths runs the install paths of the README and docs/operator.md as a user
// types them, against the local cluster: make deploy-operator and make undeploy-operator
// (nothing left behind), and make run (the operator outside the cluster reconciles a cluster).
package installpaths
