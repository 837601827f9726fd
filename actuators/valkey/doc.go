// Package valkey is the operator's hands on Valkey processes: it surveys each node (INFO,
// ACL) into the machine's Observation terms and carries out the machine's Valkey actions
// (REPLICAOF, promotion, fencing, hand-over) with valkey-go. It also renders the parts of
// valkey.conf that these actions rely on: the ACL users whose on/off state is the fence.
//
// Every action names the process (run_id) it was decided for and is refused when the node
// runs another process by then: the decision was about a process that is gone.
package valkey
