package journal

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// Kind tells what a record is.
type Kind string

const (
	// KindTransition is a transition journaled by this operator as it happened.
	KindTransition Kind = "transition"
	// KindBackfilled is a transition copied from status.history by a leader that had not
	// journaled it (its observation summary is unknown).
	KindBackfilled Kind = "backfilled"
	// KindGap stands for transitions neither journaled nor in status.history any more.
	KindGap Kind = "gap"
	// KindObservation is an observation that caused no transition (see observations.go).
	KindObservation Kind = "observation"
)

// Record is one stored journal record.
type Record struct {
	Kind  Kind          `json:"kind"`
	Entry machine.Entry `json:"entry,omitzero"`
	// GapFrom and GapTo are the first and last missing sequence numbers of a gap.
	GapFrom uint64 `json:"gapFrom,omitempty"`
	GapTo   uint64 `json:"gapTo,omitempty"`
	// Observed is, in a KindObservation record, the observation (a transition's is in
	// Entry.Observed).
	Observed *machine.JournaledObservation `json:"observed,omitempty"`
	// Recorded is when the record was written (wall clock of the operator).
	Recorded time.Time `json:"recorded"`
}

// Seq is the sequence number the record is stored under.
func (r Record) Seq() uint64 {
	switch {
	case r.Kind == KindGap:
		return r.GapFrom
	case r.Kind == KindObservation && r.Observed != nil:
		return r.Observed.Seq
	}
	return r.Entry.Seq
}

// Journal is an open bbolt journal. It is safe for concurrent use.
type Journal struct {
	db  *bolt.DB
	now func() time.Time
	obs observations
}

// ErrOutOfOrder is returned by Append for an entry that does not follow the last one.
var ErrOutOfOrder = errors.New("journal: entry does not follow the last one")

// Open opens (creating if needed) the journal file. It waits at most timeout for the file
// lock, which another process (a previous leader on the same volume) may still hold.
func Open(path string, timeout time.Duration) (*Journal, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("opening journal %s: %w", path, err)
	}
	j := &Journal{db: db, now: time.Now}
	j.obs.start(j)
	return j, nil
}

// Close writes the observations still queued and closes the file.
func (j *Journal) Close() error {
	j.obs.stop()
	return j.db.Close()
}

func key(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// Append stores the entry of a transition of cluster (a stable key such as
// namespace/name/uid). Appending the same entry again is a no-op, so a reconcile that
// crashed after journaling and repeats the transition's persistence is harmless; an entry
// that does not follow the last one is refused with ErrOutOfOrder (use Backfill first).
func (j *Journal) Append(cluster string, e machine.Entry) error {
	return j.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(cluster))
		if err != nil {
			return err
		}
		if existing := b.Get(key(e.Seq)); existing != nil {
			return nil
		}
		last := lastSeq(b)
		if e.Seq != last+1 {
			return fmt.Errorf("%w: cluster %s has %d, got %d", ErrOutOfOrder, cluster, last, e.Seq)
		}
		if err := put(b, Record{Kind: KindTransition, Entry: e, Recorded: j.now()}); err != nil {
			return err
		}
		if e.Observed != nil {
			// The next observation equal to this one is stored as a repeat of it.
			j.obs.remember(cluster, *e.Observed)
		}
		return nil
	})
}

func put(b *bolt.Bucket, r Record) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return b.Put(key(r.Seq()), data)
}

// lastSeq is the highest sequence number covered by the bucket's records (a gap record
// covers up to GapTo).
func lastSeq(b *bolt.Bucket) uint64 {
	k, v := b.Cursor().Last()
	if len(k) != len(key(0)) {
		// None, or only the observations' bucket (observations before any transition).
		return 0
	}
	var r Record
	if json.Unmarshal(v, &r) == nil && r.Kind == KindGap {
		return r.GapTo
	}
	return binary.BigEndian.Uint64(k)
}

// Last is the highest sequence number the journal holds for cluster (0: none).
func (j *Journal) Last(cluster string) (uint64, error) {
	var last uint64
	err := j.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte(cluster)); b != nil {
			last = lastSeq(b)
		}
		return nil
	})
	return last, err
}

// Backfill brings the journal of cluster up to the newest record of history (status.history,
// newest last) when it lags behind: records it lacks are copied as KindBackfilled, and
// sequence numbers that are in neither are recorded as one KindGap. It returns how many
// records it wrote.
func (j *Journal) Backfill(cluster string, history []machine.HistoryRecord) (int, error) {
	written := 0
	err := j.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(cluster))
		if err != nil {
			return err
		}
		last := lastSeq(b)
		for _, h := range history {
			if h.Seq <= last {
				continue
			}
			if h.Seq > last+1 {
				if err := put(b, Record{Kind: KindGap, GapFrom: last + 1, GapTo: h.Seq - 1, Recorded: j.now()}); err != nil {
					return err
				}
				written++
			}
			e := machine.Entry{Seq: h.Seq, Time: h.Time, Event: h.Event, From: h.From, To: h.To, Message: h.Message}
			if err := put(b, Record{Kind: KindBackfilled, Entry: e, Recorded: j.now()}); err != nil {
				return err
			}
			written++
			last = h.Seq
		}
		return nil
	})
	return written, err
}

// Records returns the records of cluster with sequence numbers from from on, oldest first,
// observations included.
func (j *Journal) Records(cluster string, from uint64) ([]Record, error) {
	out, _, err := j.Page(cluster, from, 0, true)
	return out, err
}

// MaxPageBytes bounds a page (Page with a limit) in bytes as stored, about its size as JSON:
// each record carries a whole observation, so a page bounded in records only could be
// hundreds of megabytes for a cluster of many nodes.
const MaxPageBytes = 4 << 20

// Page returns the records of cluster from sequence number from on, oldest first, and the
// sequence number the next page starts at (0 when there is no more); the observations that
// caused no transition only when observations is true (readers that know nothing of them are
// not given them). A page holds at most
// limit records (0: no limit) and, with a limit, at most MaxPageBytes, except that it never
// ends among the observations that follow a transition: it holds the whole group (a transition
// and the observations decided on the state it wrote, at most the observation limit), so that
// a page boundary is always a sequence number, as the continue token of the journal endpoint
// needs; and it holds at least one record that is not an observation (those of a new cluster,
// before its first transition, are on the first transition's page). A group is added only
// when it fits in what is left of MaxPageBytes, so only a page of one group can be larger.
func (j *Journal) Page(cluster string, from uint64, limit int, observations bool) ([]Record, uint64, error) {
	var out []Record
	var next uint64
	err := j.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(cluster))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		tk, tv := c.Seek(key(from))
		var oc *bolt.Cursor
		var ok, ov []byte
		if ob := b.Bucket(observationsBucket); ob != nil && observations {
			oc = ob.Cursor()
			ok, ov = oc.Seek(key(from))
		}
		transitions, size := 0, 0
		for tk != nil || ok != nil {
			// An observation first when it was decided on an earlier state than the next
			// transition's number: it follows the transition before that.
			if ok != nil && (tk == nil || binary.BigEndian.Uint64(ok[:8]) < binary.BigEndian.Uint64(tk)) {
				r, err := decode(cluster, ok, ov)
				if err != nil {
					return err
				}
				out = append(out, r)
				size += len(ov)
				ok, ov = oc.Next()
				continue
			}
			seq := binary.BigEndian.Uint64(tk)
			if limit > 0 && transitions > 0 && (len(out) >= limit || size+groupSize(c, oc, tk, tv) > MaxPageBytes) {
				next = seq
				return nil
			}
			size += len(tv)
			r, err := decode(cluster, tk, tv)
			if err != nil {
				return err
			}
			out = append(out, r)
			transitions++
			tk, tv = c.Next()
		}
		return nil
	})
	return out, next, err
}

// groupSize is the stored size of the group the transition at tk (value tv) starts: it and the
// observations (oc, nil when not read) decided before the next transition of c. Neither cursor
// moves.
func groupSize(c *bolt.Cursor, oc *bolt.Cursor, tk, tv []byte) int {
	n := len(tv)
	if oc == nil {
		return n
	}
	end := ^uint64(0)
	if nk, _ := c.Bucket().Cursor().Seek(append(binary.BigEndian.AppendUint64(nil, binary.BigEndian.Uint64(tk)), 0)); nk != nil {
		end = binary.BigEndian.Uint64(nk)
	}
	peek := oc.Bucket().Cursor()
	for k, v := peek.Seek(tk); k != nil && binary.BigEndian.Uint64(k[:8]) < end; k, v = peek.Next() {
		n += len(v)
	}
	return n
}

// decode reads a stored record. Values are only valid inside the transaction: Unmarshal
// copies them out.
func decode(cluster string, k, v []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(v, &r); err != nil {
		return r, fmt.Errorf("journal %s record %d: %w", cluster, binary.BigEndian.Uint64(k[:8]), err)
	}
	return r, nil
}

// LastRecorded is when the last record of cluster was written (zero when it has none).
func (j *Journal) LastRecorded(cluster string) time.Time {
	var at time.Time
	_ = j.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(cluster))
		if b == nil {
			return nil
		}
		if _, v := b.Cursor().Last(); v != nil {
			var r Record
			if json.Unmarshal(v, &r) == nil {
				at = r.Recorded
			}
		}
		return nil
	})
	return at
}

// Clusters lists the clusters the journal has records for.
func (j *Journal) Clusters() ([]string, error) {
	var out []string
	err := j.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			out = append(out, string(name))
			return nil
		})
	})
	return out, err
}
