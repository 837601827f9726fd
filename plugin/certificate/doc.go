// Package certificate is the certificate verb of kubectl valkey: the serving certificate of
// each pod as the operator saw it over the wire, against the one in the cluster's TLS Secret.
package certificate
