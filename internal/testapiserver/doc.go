// Package testapiserver runs one real kube-apiserver and etcd (envtest, with the binaries of
// internal/kubeassets) per test package: started on first use, because it takes seconds, and
// stopped by the package's TestMain. Every package gives it its own loopback ClusterIP range,
// so test binaries running in parallel never collide and nothing uses the default
// 10.0.0.0/24. It lives in internal/ because tests outside e2e/ use it and nothing may
// import e2e.
package testapiserver
