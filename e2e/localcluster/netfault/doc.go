// Package netfault breaks the network between loopback addresses of the local cluster.
//
// Every Pod of the local cluster is a process with its own loopback address (127.x.y.z), so a
// "network partition" between two Pods is a packet filter between two addresses. This package
// manages one nftables table per owner (a test, a chaos schedule) with a single filter chain
// on the output hook: on loopback every packet is generated locally, so the output hook sees
// each packet exactly once and no input chain is needed. Dropped packets vanish silently, so
// connections between partitioned addresses time out, as they do across a real partition,
// instead of being refused.
//
// Rules match addresses (Partition, Isolate) and, through Endpoint, optionally the cgroup v2
// group of a Pod's processes (PartitionEndpoints, IsolateEndpoint): a process that dials
// without binding its Pod IP sends from 127.0.0.1, which only the cgroup match attributes to
// its Pod.
//
// Tables are named vkfsm_<owner>_<pid>. The pid lets SweepStale remove the leftovers of a
// test process that crashed before it could Close its table. Everything is done by running
// the nft command (cgroup rules also use unshare and mount, see applyWithCgroups), so the
// package needs root and the nftables package; New reports ErrNotRoot or ErrNoNft otherwise so
// that tests can skip with that message.
//
// Only loopback addresses are accepted: the rules can never disturb traffic that leaves the
// machine.
package netfault
