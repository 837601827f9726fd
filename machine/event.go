package machine

import "strings"

// Event names a reason to change state. Events are kebab-case (see [State]).
type Event string

// The events of the transition table. The table in table.go is the only place that says
// which state each one leads from and to.
const (
	EventBootstrapComplete   Event = "bootstrap-complete"
	EventBootstrapElected    Event = "bootstrap-elected"
	EventPrimaryLost         Event = "primary-lost"
	EventCandidateElected    Event = "candidate-elected"
	EventCandidatePromoted   Event = "candidate-promoted"
	EventFailoverComplete    Event = "failover-complete"
	EventPrimaryRecovered    Event = "primary-recovered"
	EventSwitchoverRequested Event = "switchover-requested"
	EventPrimaryLeaving      Event = "primary-leaving"
	EventSwitchoverStale     Event = "switchover-stale"
	EventRolloutNeeded       Event = "rollout-needed"
	EventHandOverStarted     Event = "hand-over-started"
	EventPrimaryHandedOver   Event = "primary-handed-over"
	EventRolloutComplete     Event = "rollout-complete"
	EventReshardNeeded       Event = "reshard-needed"
	EventShardAdded          Event = "shard-added"
	EventShardRemoved        Event = "shard-removed"
	EventReshardComplete     Event = "reshard-complete"
	EventRestoreRequested    Event = "restore-requested"
	EventSnapshotLoaded      Event = "snapshot-loaded"
	EventRestoreComplete     Event = "restore-complete"
	EventRestoreGivenBack    Event = "restore-given-back"
	EventSpecChanged         Event = "spec-changed"
	EventReplicasChanged     Event = "replicas-changed"
	EventScaleDownHandOver   Event = "scale-down-hand-over"
	EventHistoryRenamed      Event = "history-renamed"
	EventHistoryTakenBack    Event = "history-taken-back"
	EventFenceClockRestarted Event = "fence-clock-restarted"
	EventRotationRequested   Event = "rotation-requested"
	EventPasswordsAccepted   Event = "passwords-accepted"
	EventGraceClockRestarted Event = "grace-clock-restarted"
	EventGraceEnded          Event = "grace-ended"
	EventRotationComplete    Event = "rotation-complete"
	EventCertificateReloaded Event = "certificate-reloaded"
	EventHibernateRequested  Event = "hibernate-requested"
	EventWakeRequested       Event = "wake-requested"
	EventHibernateCaughtUp   Event = "hibernate-caught-up"
	EventHibernateCancelled  Event = "hibernate-cancelled"
	EventDeposedResync       Event = "deposed-resync"
	EventDeposedResynced     Event = "deposed-resynced"
	// The Sentinel topology's (sentinel.go).
	EventSentinelFailover    Event = "sentinel-failover"
	EventSentinelPromoted    Event = "sentinel-promoted"
	EventSentinelKeptPrimary Event = "sentinel-kept-primary"
	EventSentinelEpochReset  Event = "sentinel-epoch-reset"
	EventSentinelTakeOver    Event = "sentinel-take-over"
	EventSentinelClockReset  Event = "sentinel-clock-reset"
	EventPrimaryReadmitted   Event = "primary-readmitted"
	EventRollHandOver        Event = "roll-hand-over"
)

// Reason is the CamelCase form of the event ("primary-lost" -> "PrimaryLost"). Kubernetes
// condition reasons must be CamelCase, so conditions and history records carry this form.
func (e Event) Reason() string {
	var b strings.Builder
	for _, part := range strings.Split(string(e), "-") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]))
		b.WriteString(part[1:])
	}
	return b.String()
}
