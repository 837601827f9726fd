package machine

import "slices"

// A decision's actions are carried out in order, and one that fails must not silently keep
// independent ones from being done (a replica that cannot be reached must not stop the others
// from converging, nor a volume from growing). An action depends on an earlier one that
// failed when it involves (runs on, points a replica at, hands over to, migrates to) a node
// the failed one may have left in between: the node it ran on, both ends of a hand-over or a
// slot migration (a replica-of that failed says nothing about its primary); and on an
// earlier fence, the one action whose failure leaves a node open that the rest of the
// decision assumed closed. Slot migrations never block one another: the moves of one decision
// take different slots, each is finished by the next migration of its range whatever state it
// was left in, and the operator runs them side by side (sources feeding one new shard at once is
// where a resharding wins its time). An assign-slots after a failed forget-node is skipped: the
// slots it assigns are the forgotten node's, free only once every node forgot it. Actions on the cluster's objects (ensure-objects, expand-volumes, publish-passwords)
// involve no node: they neither block nor are blocked by node actions. Both the operator and
// the simulated operator skip exactly the dependent actions (Blocked); the machine decides the
// skipped ones again from the next observation.

// Involved lists the nodes an action involves.
func Involved(a Action) []string {
	switch a := a.(type) {
	case Promote:
		return []string{a.Node}
	case Detach:
		return []string{a.Node}
	case Fence:
		return []string{a.Node}
	case Seal:
		return []string{a.Node}
	case Unseal:
		return []string{a.Node}
	case OpenWrites:
		return []string{a.Node}
	case CloseWrites:
		return []string{a.Node}
	case ReplicaOf:
		return []string{a.Node, a.Primary}
	case HandOver:
		return []string{a.From, a.To}
	case RollPod:
		return []string{a.Node}
	case AssignSlots:
		return []string{a.Node}
	case TakeSlotsOver:
		return []string{a.Node, a.From}
	case AddNode:
		return []string{a.Node}
	case RemoveNode:
		return []string{a.Node}
	case MigrateSlots:
		return []string{a.FromNode, a.ToNode}
	case RestoreSnapshot:
		return []string{a.Node}
	case AddPasswords:
		return []string{a.Node}
	case SwitchMasterAuth:
		return []string{a.Node}
	case RetirePasswords:
		return []string{a.Node}
	case ReloadCertificate:
		return []string{a.Node}
	}
	return nil
}

// Blocked reports whether a must be skipped because failed, actions of the same decision
// carried out before it, failed.
func Blocked(a Action, failed []Action) bool {
	mine := Involved(a)
	_, migration := a.(MigrateSlots)
	for _, f := range failed {
		if _, other := f.(MigrateSlots); migration && other {
			continue
		}
		if _, fence := f.(Fence); fence {
			return true
		}
		if _, forget := f.(ForgetNode); forget {
			if _, assign := a.(AssignSlots); assign {
				return true
			}
		}
		for _, n := range affected(f) {
			if n != "" && slices.Contains(mine, n) {
				return true
			}
		}
	}
	return false
}

// affected lists the nodes a failed action may have left in between: the node it runs on,
// and both ends of a hand-over or a slot migration. A replica-of that failed says nothing
// about the primary it named.
func affected(f Action) []string {
	switch f.(type) {
	case HandOver, MigrateSlots:
		return Involved(f)
	}
	return Involved(f)[:min(1, len(Involved(f)))]
}
