package sim

// Hello messages (sentinel.c sentinelSendHello, sentinelProcessHelloMessage): every two
// seconds a sentinel publishes, on the hello channel of the master and of each replica and
// directly to each sentinel it knows, its address, run id and current epoch, and the master's
// address and config epoch as it sees them. A sentinel learns of the others only through the
// data nodes' channel; from every hello it takes a higher current epoch and, when the config
// epoch is higher than its own, the master's address: the higher epoch wins.

// hello is one hello message's payload.
type hello struct {
	addr, runID  string
	currentEpoch uint64
	masterAddr   string
	configEpoch  uint64
}

func (sw *SentinelWorld) helloOf(s *sentinel) hello {
	return hello{addr: s.ip, runID: s.myid, currentEpoch: s.currentEpoch, masterAddr: currentMasterAddr(s.m), configEpoch: s.m.configEpoch}
}

// helloToNode publishes s's hello on node n's hello channel: every other sentinel that
// monitors n (as its master or one of its replicas) and has a link to it receives it.
func (sw *SentinelWorld) helloToNode(s *sentinel, inst *instance, n *node) {
	inst.lastPub = sw.w.tick
	h := sw.helloOf(s)
	for _, t := range sw.sentinels {
		if t == s || t.m == nil || !sw.talksToNode(t, n) {
			continue
		}
		if t.m.inst.addr == inst.addr || t.m.replicaAt(inst.addr) != nil {
			sw.processHello(t, h)
		}
	}
}

// helloToSentinel sends s's hello to the sentinel p names (Sentinel's own PUBLISH), when a
// process with that id answers at that address.
func (sw *SentinelWorld) helloToSentinel(s *sentinel, p *peer) {
	p.lastPub = sw.w.tick
	t := sw.sentinelByAddr(p.addr)
	if t == nil || t.myid != p.runID || !sw.talksToSentinel(s, t) {
		return
	}
	sw.processHello(t, sw.helloOf(s))
}

// processHello is sentinelProcessHelloMessage on t.
func (sw *SentinelWorld) processHello(t *sentinel, h hello) {
	m := t.m
	if m == nil {
		return // a hello about a group t does not monitor
	}
	var si *peer
	for _, p := range m.sentinels {
		if p.addr == h.addr && p.runID == h.runID {
			si = p
		}
	}
	if si == nil {
		// A known id at a new address replaces its old entry (+sentinel-address-switch);
		// another id at the same address is dropped (+sentinel-invalid-addr).
		kept := m.sentinels[:0]
		for _, p := range m.sentinels {
			if p.runID != h.runID && p.addr != h.addr {
				kept = append(kept, p)
			}
		}
		m.sentinels = kept
		si = &peer{runID: h.runID, addr: h.addr, lastHello: sw.w.tick, lastDownReply: sw.w.tick, lastPub: sw.w.tick}
		m.sentinels = append(m.sentinels, si)
		sw.peersLearnt++
		sw.event(t, "+sentinel", 0, "%s at %s", h.runID, h.addr)
	}
	if h.currentEpoch > t.currentEpoch {
		t.currentEpoch = h.currentEpoch
		sw.event(t, "+new-epoch", h.currentEpoch, "")
	}
	if m.configEpoch < h.configEpoch {
		m.configEpoch = h.configEpoch
		if h.masterAddr != m.inst.addr {
			sw.event(t, "+config-update-from", h.configEpoch, "%s", h.runID)
			sw.event(t, "+switch-master", h.configEpoch, "%s -> %s", m.inst.addr, h.masterAddr)
			sw.resetAndChangeAddress(t, h.masterAddr)
		}
	}
	si.lastHello = sw.w.tick
}

// forceHello makes the next timer publish the hellos at once (sentinelForceHelloUpdateForPrimary).
func (sw *SentinelWorld) forceHello(m *monitored) {
	m.inst.lastPub -= sentinelPublishPeriod + 1
	for _, r := range m.replicas {
		r.lastPub -= sentinelPublishPeriod + 1
	}
	for _, p := range m.sentinels {
		p.lastPub -= sentinelPublishPeriod + 1
	}
}
