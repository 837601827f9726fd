// Package sentinelreal plays a small table of Sentinel scenarios twice: against the
// simulator's model of Valkey Sentinel (machine/sim's SentinelWorld) and against real
// valkey-server and valkey-sentinel processes (8.0 and 9.1) on loopback addresses of their
// own (127.237.0.0/16), partitioned with nftables. Each scenario asserts the same outcome on
// both sides: the model is only worth its findings if real sentinels behave the same.
// It also plays the sentinels' actuator contract (conformance.SentinelTable) on real
// sentinels through the operator's actuator (actuators/valkey), on the ports the product's
// pods use. It needs no Kubernetes; the real side needs root and nft for the partition
// scenario.
package sentinelreal
