package election

// Place is where a node's data stands in the replication histories, as Valkey reports it:
// RunID names the process (for claims), ID is master_replid at Offset (master_repl_offset),
// PrevID is master_replid2, valid below PrevEnd (second_repl_offset, exclusive), and Keys is
// the key count (DBSIZE).
type Place struct {
	RunID   string
	ID      string
	PrevID  string
	PrevEnd int64
	Offset  int64
	Keys    int64
}

// Empty reports whether the node holds no data: offset 0 and no keys.
func (p Place) Empty() bool {
	return p.Offset == 0 && p.Keys == 0
}
