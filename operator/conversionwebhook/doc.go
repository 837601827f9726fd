// Package conversionwebhook is the CRD conversion webhook of the valkey.fsm.dev kinds
// (ValkeyCluster, ValkeyBackup, ValkeyACL): the API server stores v1beta1 and asks it to
// convert whenever a client reads or writes v1alpha1. The operator serves it on every replica
// (operator/manager); tests serve it beside their API server (internal/testapiserver,
// e2e/valkeyapi). It is a package of its own, without the reconciler, so that the test API
// server of the reconciler's own tests can serve it.
package conversionwebhook
