// Package netfault breaks the network between loopback addresses of the local cluster.
//
// Every Pod of the local cluster has its own loopback address (127.x.y.z) in a network
// namespace of its own, attached to the cluster's bridge, so a "network partition" between two
// Pods is a packet filter between two addresses. This package manages, per owner (a test, a
// chaos schedule), one nftables table in two families with the same rules: an inet table
// filtering the host's output hook (what host processes send, and loopback traffic between
// addresses of the host, where every packet is generated locally), and a bridge table whose
// prerouting and output hooks see every frame crossing a bridge (Pod to Pod, Pod to host, host
// to Pod). Dropped packets vanish silently, so connections between partitioned addresses time
// out, as they do across a real partition, instead of being refused.
//
// Rules match addresses (Partition, Isolate) and, through Endpoint, optionally the cgroup v2
// group of the sending host processes (PartitionEndpoints, IsolateEndpoint), for processes that
// share the host's network namespace and send from 127.0.0.1 whoever they are.
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
