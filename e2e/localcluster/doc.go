// Package localcluster runs a real Kubernetes control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, built from the Go module proxy) whose Pods are real
// processes started by a node agent in this package: the kubelet of this world.
//
// Every Pod gets its own loopback address (127.x.y.z) as status.podIP, its own mount
// namespace in which its volumes appear at their mount paths over a copy-on-write view of the
// host's root file system, and real restarts, probes and graceful termination. A service proxy
// serves ClusterIP Services on loopback addresses, a provisioner binds claims to directories,
// and Faults (SIGKILL, pause, partitions, node stops, empty restarts) let tests and chaos
// suites break things on purpose. The agent enforces the ingress rules of NetworkPolicies with
// nftables (refused connections get a TCP reset; egress is not enforced): see netpolicy.go and
// WaitNetworkPolicies. The agent also serves each Node's kubelet API over mutually
// authenticated HTTPS, so kubectl logs (with -f and --previous), exec, attach and port-forward
// work through the real API server (kubeletserver.go, Cluster.Kubectl).
//
// Memory limits hold as under a kubelet: a container's resources.limits.memory is its
// cgroup's hard limit, a container that allocates past it is ended by the kernel's OOM
// killer, reported terminated with reason OOMKilled (exit code 137) and restarted, and
// Cluster.ContainerMemory gives the kernel's figures for it (limit, peak, OOM kills). The
// memory controller is the unified hierarchy's when it has it, else the v1 memory hierarchy's
// of a hybrid machine (memcgroup.go); with neither, limits are not enforced
// (Cluster.MemoryLimitsEnforced). CPU limits are not enforced.
//
// StartCertManager runs the real cert-manager (its controllers and cainjector, built from the
// Go module proxy, as a host process) so that tests get TLS certificates issued and renewed,
// and caBundles injected, as in a real installation.
//
// What it is not: there is no image isolation (containers see the host's binaries; images map
// to local programs), no network namespace (a process that binds 0.0.0.0 takes the port for
// every Pod: bind to status.podIP), no cluster DNS, and it needs root (mount namespaces,
// nftables). See docs/development/local-cluster.md.
package localcluster
