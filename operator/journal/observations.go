package journal

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// Observations that caused no transition are journaled too, so that a replay with other
// settings can show a decision taken earlier or later than it was (machine/replay). There are
// many more of them than transitions (one per survey of every cluster), so:
//   - One equal to the observation journaled just before it for the cluster apart from its
//     time is stored as a repeat: its time only (an idle cluster costs about 100 bytes a
//     survey).
//   - Each cluster keeps its newest ObservationLimit of them; older ones are deleted (the
//     transitions and their observations are never deleted). A whole observation takes
//     1-1.5 KB a node as JSON: with the default 100, a 3-pod cluster whose offsets move on
//     every survey keeps about 400 KB of them (1000 such clusters 400 MB, within the chart's
//     1 GiB journal volume), the last 100 surveys (more than a minute and a half at one a
//     second; a failover surveys every 50 ms while it acts).
//   - They are written by one goroutine, in batches, never on the reconcile's path: a
//     reconcile only queues one. When the queue is full the observation is dropped and
//     counted (Dropped): a replay then sees a longer interval between two observations.
//
// They are stored in a bucket inside the cluster's (named "\x00", which sorts before every
// sequence number, so readers that know nothing of it skip it), keyed by the sequence number
// of the state they were decided on and a running number: in the order they were taken.

// DefaultObservationLimit is how many observations without a transition a cluster keeps.
const DefaultObservationLimit = 100

// observationQueue is how many observations may wait to be written.
const observationQueue = 4096

var observationsBucket = []byte{0}

type queued struct {
	cluster string
	seq     uint64
	// data is the record, marshalled when it was queued: the caller's observation shares
	// slices with what it goes on using.
	data []byte
	// flushed, when set, is closed once everything queued before it is written.
	flushed chan struct{}
}

// observations is the journal's writer of observations.
type observations struct {
	j     *Journal
	queue chan queued
	done  chan struct{}

	// limit is read by the writer, which never takes mu (Flush holds it while it queues).
	limit atomic.Int64

	mu     sync.Mutex
	closed bool
	// last is the fingerprint of the observation journaled last, per cluster.
	last    map[string][sha256.Size]byte
	dropped uint64
}

func (o *observations) start(j *Journal) {
	o.j = j
	o.limit.Store(DefaultObservationLimit)
	o.queue = make(chan queued, observationQueue)
	o.done = make(chan struct{})
	o.last = map[string][sha256.Size]byte{}
	go o.run()
}

func (o *observations) stop() {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.closed = true
	close(o.queue)
	o.mu.Unlock()
	<-o.done
}

// remember records that obs was journaled for cluster (a transition's observation).
func (o *observations) remember(cluster string, obs machine.Observation) {
	fp, ok := machine.Fingerprint(obs)
	o.mu.Lock()
	defer o.mu.Unlock()
	if ok {
		o.last[cluster] = fp
	} else {
		delete(o.last, cluster)
	}
}

// SetObservationLimit sets how many observations without a transition each cluster keeps
// (0: none are journaled).
func (j *Journal) SetObservationLimit(n int) {
	j.obs.limit.Store(int64(max(n, 0)))
}

// Observe queues an observation that caused no transition of cluster, decided on the state
// of sequence number seq, to be journaled. It never blocks: see Dropped.
func (j *Journal) Observe(cluster string, seq uint64, obs machine.Observation) {
	o := &j.obs
	fp, ok := machine.Fingerprint(obs)
	o.mu.Lock()
	prev, known := o.last[cluster]
	off := o.closed || o.limit.Load() == 0
	o.mu.Unlock()
	if off {
		return
	}
	// Marshalled here, outside the lock (reconciles of other clusters go on meanwhile; the
	// same cluster is never reconciled twice at once).
	rec := machine.JournaledObservation{Seq: seq, Time: obs.Time}
	if !ok || !known || prev != fp {
		rec.Observation = &obs
	}
	data, err := json.Marshal(Record{Kind: KindObservation, Observed: &rec, Recorded: j.now()})
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	if err != nil {
		o.dropped++
		delete(o.last, cluster)
		return
	}
	select {
	case o.queue <- queued{cluster: cluster, seq: seq, data: data}:
		if ok {
			o.last[cluster] = fp
		} else {
			delete(o.last, cluster)
		}
	default:
		o.dropped++
		// The next one is stored whole: the one it would repeat may be the dropped one.
		delete(o.last, cluster)
	}
}

// Dropped is how many observations were not journaled because the queue was full.
func (j *Journal) Dropped() uint64 {
	j.obs.mu.Lock()
	defer j.obs.mu.Unlock()
	return j.obs.dropped
}

// Flush waits until every observation queued so far is written.
func (j *Journal) Flush() {
	o := &j.obs
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	o.queue <- queued{flushed: ch}
	o.mu.Unlock()
	<-ch
}

// run writes queued observations, everything waiting in one transaction.
func (o *observations) run() {
	defer close(o.done)
	for first := range o.queue {
		batch := []queued{first}
	more:
		for len(batch) < 512 {
			select {
			case q, ok := <-o.queue:
				if !ok {
					break more
				}
				batch = append(batch, q)
			default:
				break more
			}
		}
		limit := int(o.limit.Load())
		// A journal failure stops nothing (status is authoritative); the observations of
		// the failed batch are lost, as a full queue's are.
		_ = o.j.db.Update(func(tx *bolt.Tx) error {
			for _, q := range batch {
				if q.flushed != nil {
					continue
				}
				if err := putObservation(tx, q, limit); err != nil {
					return err
				}
			}
			return nil
		})
		for _, q := range batch {
			if q.flushed != nil {
				close(q.flushed)
			}
		}
	}
}

// putObservation stores one observation and deletes the cluster's oldest beyond limit. One
// decided on an older state than the last one stored (a reconcile that read a status since
// overwritten: the machine took it as stale) is not stored.
func putObservation(tx *bolt.Tx, q queued, limit int) error {
	b, err := tx.CreateBucketIfNotExists([]byte(q.cluster))
	if err != nil {
		return err
	}
	ob, err := b.CreateBucketIfNotExists(observationsBucket)
	if err != nil {
		return err
	}
	if lk, _ := ob.Cursor().Last(); lk != nil && binary.BigEndian.Uint64(lk[:8]) > q.seq {
		return nil
	}
	n, err := ob.NextSequence()
	if err != nil {
		return err
	}
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, q.seq)
	binary.BigEndian.PutUint64(k[8:], n)
	if err := ob.Put(k, q.data); err != nil {
		return err
	}
	// Keys are in the order observations were taken (the state's sequence number never
	// goes back), so the oldest is first, and the running numbers have no holes but at the
	// front: the count is the newest's number minus the oldest's, plus one.
	c := ob.Cursor()
	for fk, _ := c.First(); fk != nil && n-binary.BigEndian.Uint64(fk[8:])+1 > uint64(limit); fk, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}
