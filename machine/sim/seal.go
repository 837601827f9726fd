package sim

import "github.com/valkey-fsm/valkey-operator/machine"

// Seals and the handshake a seal cannot see. A replica that lost its link retries a
// handshake every second. The master counts it (marks it online, its acknowledgement time
// now) as soon as it answers the replica's PSYNC; if that answer does not reach the replica (a
// one-way partition), the replica still says "link down" while the master counts it until
// the acknowledgement is maxLag old. So a replica's "link down since" bounds nothing about the
// master's view: only a seal taken while the replica had no connection at all (ROLE
// "connect", no handshake in flight) does, because no later handshake gets past the password.
// The machine uses exactly that (machine.Seal); this model is what would catch it using less.

// halfHandshake is a handshake whose requests reach m but whose replies do not reach r: m
// counts r from now on; r waits for the reply, its link still down.
func (w *World) halfHandshake(r, m *node) {
	if w.handshakeInFlight(r, m) || !authAccepted(r, m) {
		return
	}
	r.handshakeTo, r.handshakeRun = m.ip, m.runID
	m.setAck(r.name, w.tick)
	w.note("%s handshake with %s half done: %s counts it, its reply does not arrive", r.name, m.name, m.name)
}

// handshakeInFlight reports whether r waits for m's reply to a handshake m already counted.
func (w *World) handshakeInFlight(r, m *node) bool {
	return r.handshakeTo != "" && r.handshakeTo == m.ip && r.handshakeRun == m.runID && r.masterIP == m.ip
}

// applySeal carries out Seal and Unseal. The seal's time is the acting operator's clock after
// the node confirmed it, as the real actuator reads it; Unlinked is what ROLE said.
func (w *World) applySeal(n *node, a machine.Action) error {
	switch a.(type) {
	case machine.Seal:
		n.seal = machine.SealRecord{At: timeOf(w.tick + w.actingSkew), Clock: w.actingClock, Unlinked: !n.linkUp && n.handshakeTo == ""}
	case machine.Unseal:
		n.seal = machine.SealRecord{}
	}
	return nil
}
