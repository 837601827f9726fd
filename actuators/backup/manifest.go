package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// A backup of a whole cluster is one snapshot per shard and a manifest, written last, that names
// them: a backup without its manifest is incomplete (a backup that failed half-way, or is still
// being written) and is never restored.

// ManifestName is the manifest's name inside a backup's directory.
const ManifestName = "manifest.json"

// Manifest describes a complete backup.
type Manifest struct {
	// Backup is the backup's name (its directory in the store).
	Backup string `json:"backup"`
	// Cluster is the ValkeyCluster it was taken from, Mode its topology's mode.
	Cluster string       `json:"cluster"`
	Mode    machine.Mode `json:"mode"`
	// ValkeyVersion is the version the source nodes reported.
	ValkeyVersion string    `json:"valkeyVersion,omitempty"`
	Started       time.Time `json:"started"`
	Completed     time.Time `json:"completed"`
	Shards        []Shard   `json:"shards"`
}

// Shard is one shard's snapshot in a backup.
type Shard struct {
	Index int `json:"index"`
	// Node is the pod the snapshot was read from.
	Node string `json:"node"`
	// Slots are the hash slots the shard served (cluster mode).
	Slots []machine.SlotRange `json:"slots,omitempty"`
	File  string              `json:"file"`
	Size  int64               `json:"size"`
	// SHA256 is the hex sha256 of the file.
	SHA256     string `json:"sha256"`
	RDBVersion string `json:"rdbVersion"`
}

// ShardSource is where one shard's snapshot is read from.
type ShardSource struct {
	Index int
	Node  string
	// IP is the node's pod IP.
	IP    string
	Slots []machine.SlotRange
	// Primary and PrimaryIP are the shard's recorded primary (the source itself when no
	// replica qualifies).
	Primary, PrimaryIP string
	Source
}

// TakeAll takes a backup of every shard into the directory backup of the store, one after the
// other, then writes the manifest. A shard that fails fails the whole backup: the snapshots
// already stored are deleted (best effort: without a manifest they are never restored anyway),
// and no manifest is written.
func TakeAll(ctx context.Context, store Store, backup, cluster string, mode machine.Mode, version string, shards []ShardSource, now func() time.Time) (Manifest, error) {
	// A name is used once: writing into a complete backup would replace its files under its
	// manifest, and deleting them on a failure would destroy it.
	if _, err := store.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String(store.Key(path.Join(backup, ManifestName)))}); err == nil {
		return Manifest{}, fmt.Errorf("a backup named %s exists in %s already", backup, store.Location(""))
	}
	m := Manifest{Backup: backup, Cluster: cluster, Mode: mode, ValkeyVersion: version, Started: now().UTC()}
	cleanUp := func() {
		for _, done := range m.Shards {
			_ = store.Delete(context.WithoutCancel(ctx), path.Join(backup, done.File))
		}
	}
	for _, s := range shards {
		file := fmt.Sprintf("shard-%d.rdb", s.Index)
		res, err := Take(ctx, s.Source, store, path.Join(backup, file))
		if err != nil {
			cleanUp()
			return Manifest{}, fmt.Errorf("shard %d (%s): %w", s.Index, s.Node, err)
		}
		m.Shards = append(m.Shards, Shard{Index: s.Index, Node: s.Node, Slots: s.Slots, File: file, Size: res.Size, SHA256: res.SHA256, RDBVersion: res.RDBVersion})
	}
	m.Completed = now().UTC()
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, err
	}
	if _, err := store.Client().PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(store.Bucket), Key: aws.String(store.Key(path.Join(backup, ManifestName))),
		Body: bytes.NewReader(body), ContentType: aws.String("application/json"),
	}); err != nil {
		cleanUp()
		return Manifest{}, fmt.Errorf("writing the manifest: %w", err)
	}
	return m, nil
}

// ErrIncomplete: the backup has no manifest.
var ErrIncomplete = errors.New("the backup is incomplete: it has no manifest")

// ReadManifest reads a backup's manifest, refusing a backup without one.
func ReadManifest(ctx context.Context, store Store, backup string) (Manifest, error) {
	out, err := store.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String(store.Key(path.Join(backup, ManifestName)))})
	if err != nil {
		var missing interface{ ErrorCode() string }
		if errors.As(err, &missing) && missing.ErrorCode() == "NoSuchKey" {
			return Manifest{}, fmt.Errorf("%s: %w", store.Location(backup+"/"), ErrIncomplete)
		}
		return Manifest{}, fmt.Errorf("reading the manifest of %s: %w", store.Location(backup+"/"), err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(io.LimitReader(out.Body, 16<<20))
	if err != nil {
		return Manifest{}, err
	}
	return parseManifest(body, store.Location(backup+"/"))
}

// parseManifest reads a manifest's JSON (at is where it was read, for messages).
func parseManifest(body []byte, at string) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return Manifest{}, fmt.Errorf("%w: the manifest of %s: %v", ErrCorrupt, at, err)
	}
	return m, nil
}

// errMismatch: the backup is whole but was taken from a cluster of another shape.
var errMismatch = errors.New("the backup does not fit the cluster")

// Refused reports whether err refuses a backup for what it holds (its content, or the shape of
// the cluster it was taken from): reading it again gives the same answer.
func Refused(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, errMismatch)
}

// VerifyBackup checks that a backup can be restored onto a cluster of mode with shards shards:
// its manifest exists and fits (checkManifest), and every file matches its record (size and
// sha256, checked before a byte of it is parsed) and is a whole RDB file a node can load
// (validate; in cluster mode every key must hash to its shard's slots). Nothing is touched. A
// refusal of the backup for what it holds is Refused.
func VerifyBackup(ctx context.Context, store Store, backup string, mode machine.Mode, shards int) (Manifest, error) {
	m, err := ReadManifest(ctx, store, backup)
	if err != nil {
		return Manifest{}, err
	}
	if err := checkManifest(m, mode, shards, store.Location(backup+"/")); err != nil {
		return Manifest{}, err
	}
	for _, s := range m.Shards {
		// Size and sha256 first, then the whole structure, in every mode: nothing reaches a
		// node that a node could not load.
		if _, _, err := validate(ctx, store, path.Join(backup, s.File), Result{Size: s.Size, SHA256: s.SHA256}, m.Mode == machine.ModeCluster, s.Slots); err != nil {
			return Manifest{}, fmt.Errorf("shard %d: %w", s.Index, err)
		}
	}
	return m, nil
}

// checkManifest checks, before any file is read, that a manifest read at at fits a cluster of
// mode with shards shards: taken in that mode, that many shards, one each in order, each a
// plain file name with its size and sha256 recorded, whose slots (cluster mode) cover every
// slot once.
func checkManifest(m Manifest, mode machine.Mode, shards int, at string) error {
	if m.Mode != mode {
		return fmt.Errorf("%w: %s was taken in %s mode, the cluster runs in %s mode", errMismatch, at, m.Mode, mode)
	}
	if len(m.Shards) != shards {
		return fmt.Errorf("%w: %s holds %d shard(s), the cluster has %d: restore it into a cluster of %d shard(s)", errMismatch, at, len(m.Shards), shards, len(m.Shards))
	}
	var covered [machine.NumSlots]bool
	for i, s := range m.Shards {
		if s.Index != i {
			return fmt.Errorf("%w: the manifest of %s lists shard %d in place %d", ErrCorrupt, at, s.Index, i)
		}
		if err := shardFile(s); err != nil {
			return fmt.Errorf("the manifest of %s: %w", at, err)
		}
		if err := (Result{Size: s.Size, SHA256: s.SHA256}).recorded(); err != nil {
			return fmt.Errorf("the manifest of %s, shard %d: %w", at, s.Index, err)
		}
		if m.Mode != machine.ModeCluster {
			continue
		}
		for _, r := range s.Slots {
			if r.Start < 0 || r.End >= machine.NumSlots || r.Start > r.End {
				return fmt.Errorf("%w: the manifest of %s gives shard %d slots %d-%d, outside 0-%d", ErrCorrupt, at, s.Index, r.Start, r.End, machine.NumSlots-1)
			}
			for slot := r.Start; slot <= r.End; slot++ {
				if covered[slot] {
					return fmt.Errorf("%w: slot %d is given twice in the manifest of %s", ErrCorrupt, slot, at)
				}
				covered[slot] = true
			}
		}
	}
	if m.Mode == machine.ModeCluster {
		for slot, ok := range covered {
			if !ok {
				return fmt.Errorf("%w: slot %d belongs to no shard in the manifest of %s", ErrCorrupt, slot, at)
			}
		}
	}
	return nil
}
