// Package serviceproxy is the kube-proxy of the local cluster.
//
// The local cluster gives every Pod a loopback address and allocates Service ClusterIPs from
// a loopback range as well, so a Service can be served the simple way: a TCP listener on
// ClusterIP:port for every TCP port of every Service, forwarding each accepted connection to
// one Ready Pod behind it. All of 127.0.0.0/8 is local on Linux, so binding those addresses
// needs no interface configuration (ports below 1024, such as the kubernetes Service's 443,
// need root, which the local cluster has anyway).
//
// Backends come from Pods, not EndpointSlices: the API server refuses endpoints in the
// loopback range, so the proxy watches Pods and applies the EndpointSlice controller's rules
// itself (selector, namespace, Ready condition, not terminating, pod IP set). Selector-less
// Services, such as default/kubernetes, can be given a fixed backend through Options.Static.
//
// Like kube-proxy's iptables mode the proxy keeps the client's source address where it can:
// it dials the backend from the client's own loopback address, so a netfault partition
// between a client and a Pod also cuts their traffic through Services. Where the backends
// live in network namespaces of their own (the local cluster), a userspace proxy cannot
// keep a source the backend would answer elsewhere (127.0.0.1, another Pod's address):
// Options.KeepSource says which addresses it keeps.
package serviceproxy
