package machine

import "fmt"

// SentinelTarget names one sentinel process: its pod, its address and its id (SENTINEL
// MYID). An actuator refuses an action on a sentinel that answers with another id, as it
// refuses one on a data node that runs another process: the decision was taken on what that
// sentinel said.
type SentinelTarget struct {
	Sentinel string
	IP       string
	ID       string
}

// SentinelTargetOf is the target of sentinel s as observed.
func SentinelTargetOf(s Sentinel) SentinelTarget {
	return SentinelTarget{Sentinel: s.Name, IP: s.IP, ID: s.ID}
}

// SentinelMonitor makes a sentinel monitor the cluster's group with Settings. A sentinel that
// does not monitor it starts to, at the primary at PrimaryIP (SENTINEL MONITOR), with the
// group's config epoch at 0; one that monitors it already keeps the primary it names and only
// takes the settings (SENTINEL SET): the actuator never moves a sentinel's primary, which
// would be a failover behind the sentinels' backs.
type SentinelMonitor struct {
	SentinelTarget
	Primary   string
	PrimaryIP string
	Settings  SentinelSettings
}

// SentinelRemove makes a sentinel forget the cluster's group (SENTINEL REMOVE): it neither
// starts a failover of it nor votes for one from then on. Nothing when it monitors none.
type SentinelRemove struct {
	SentinelTarget
}

// SentinelReset makes a sentinel forget the replicas and other sentinels it knows for the
// cluster's group and find them again (SENTINEL RESET): from the primary's INFO and the others'
// hellos, within seconds. The primary it names, the config epoch, its vote's epoch and the
// settings stay. Nothing when it monitors none.
type SentinelReset struct {
	SentinelTarget
}

// HoldBack sets a replica's replica-priority to 0 while its replication user stays on, so
// that no sentinel picks it: before a planned SENTINEL FAILOVER, every replica but the
// hand-over's target is held back, and the sentinels' pick can only be the target. OpenWrites
// gives the priority back.
type HoldBack struct {
	Target
}

// SentinelHandOver is the Sentinel topology's planned hand-over from the recorded primary
// From to its replica To, carried out by one sentinel: client writes on From are closed (as
// CloseWrites), To is seen holding everything From holds (From's replication offset), then
// the sentinel is sent SENTINEL FAILOVER, which it carries out with To as its pick (every
// other replica held back, as the sentinel has read). When To is not caught up or the
// sentinel refuses, From's writes are opened again and nothing else changed.
type SentinelHandOver struct {
	SentinelTarget
	HandOver
}

// RollSentinel deletes a sentinel's pod so that its StatefulSet makes it again from its
// template at Revision. The sentinel comes back from its file on its volume: the same id, the
// epochs it voted in, the group, its replicas and the other sentinels; only its address may
// change, which the others learn from its hellos. The actuator deletes only the pod that ran
// the sentinel decided for (its id, when it answered) and that is not at Revision already.
type RollSentinel struct {
	SentinelTarget
	Revision string
}

func (RollSentinel) Kind() string { return "roll-sentinel" }

func (a RollSentinel) String() string {
	return fmt.Sprintf("roll-sentinel %s to %s", a.Sentinel, a.Revision)
}

func (HoldBack) Kind() string         { return "hold-back" }
func (SentinelHandOver) Kind() string { return "sentinel-hand-over" }

func (a HoldBack) String() string { return fmt.Sprintf("hold-back %s", a.Node) }

func (a SentinelHandOver) String() string {
	return fmt.Sprintf("sentinel-hand-over %s: %s -> %s", a.Sentinel, a.From, a.To)
}

func (SentinelMonitor) Kind() string { return "sentinel-monitor" }
func (SentinelRemove) Kind() string  { return "sentinel-remove" }
func (SentinelReset) Kind() string   { return "sentinel-reset" }

func (a SentinelRemove) String() string { return fmt.Sprintf("sentinel-remove %s", a.Sentinel) }
func (a SentinelReset) String() string  { return fmt.Sprintf("sentinel-reset %s", a.Sentinel) }

func (a SentinelMonitor) String() string {
	return fmt.Sprintf("sentinel-monitor %s -> %s (%s) quorum=%d down-after=%dms failover-timeout=%dms parallel-syncs=%d",
		a.Sentinel, a.Primary, a.PrimaryIP, a.Settings.Quorum, a.Settings.DownAfterMillis, a.Settings.FailoverTimeoutMillis, a.Settings.ParallelSyncs)
}
