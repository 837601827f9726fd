package backup

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	tm "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	tmtypes "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager/types"
	"github.com/aws/smithy-go"
)

// Source is the node a snapshot is read from, and the replication user's credentials.
type Source struct {
	Addr, User, Password string
	// LocalAddr, when set, is the connection's local address (the operator pod's IP, as for
	// every other connection to the nodes).
	LocalAddr net.Addr
	// TLS, when set, wraps the connection (a node that serves TLS: Addr is its TLS port).
	TLS *tls.Config
}

// Result describes a stored snapshot.
type Result struct {
	Key    string
	Size   int64
	SHA256 string
	// RDBVersion is the version in the file's header ("0011", "080").
	RDBVersion string
}

// partSize is the multipart upload's part size: a backup holds at most partSize × parts
// (10,000) bytes, 160 GiB with 16 MiB parts, and buffers partSize × concurrency in memory.
const partSize = 16 << 20

// Take streams a snapshot of src into the store under name: nothing is written to any disk on
// the way. The snapshot's sha256 is computed and its structure checked as it streams; a stream
// that fails (the node lost, the connection cut) or fails the check makes the upload fail, and
// the store's multipart upload is aborted, so that no object under name holds a partial or bad
// snapshot (one that was there before is left as it was).
func Take(ctx context.Context, src Source, store Store, name string) (Result, error) {
	sse, kms, err := store.sse()
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	sum := sha256.New()
	var chk rdbCheck
	streamed := make(chan error, 1)
	var size int64
	// streamFailed is set before the stream's error reaches the upload: when the upload then
	// fails, the stream's error is the cause to report.
	var streamFailed atomic.Bool
	go func() {
		n, err := streamRDBFrom(ctx, src.LocalAddr, src.TLS, src.Addr, src.User, src.Password, io.MultiWriter(sum, &chk, pw))
		size = n
		if err == nil {
			err = chk.done()
		}
		if err != nil {
			err = fmt.Errorf("reading the snapshot of %s: %w", src.Addr, err)
			streamFailed.Store(true)
		}
		_ = pw.CloseWithError(err) // nil: the reader sees EOF
		streamed <- err
	}()
	_, upErr := store.uploader().UploadObject(ctx, &tm.UploadObjectInput{
		Bucket:               aws.String(store.Bucket),
		Key:                  aws.String(store.Key(name)),
		Body:                 pr,
		ContentType:          aws.String("application/octet-stream"),
		ServerSideEncryption: tmtypes.ServerSideEncryption(sse),
		SSEKMSKeyID:          kms,
	})
	causedByStream := streamFailed.Load()
	// An upload that failed on its own (the store unreachable, refused) stops the stream.
	_ = pr.CloseWithError(errUploadStopped)
	cancel()
	streamErr := <-streamed
	if upErr != nil {
		// The caller's context may be the one that was cancelled: the clean-up gets its own.
		actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
		_, abortErr := abortUploadsOf(actx, store, store.Key(name))
		acancel()
		err := fmt.Errorf("uploading to %s: %w", store.Location(name), upErr)
		if causedByStream {
			err = streamErr
		}
		if abortErr != nil {
			err = fmt.Errorf("%w; the parts it sent may stay stored until the operator's next start (%s)", err, rootCause(abortErr))
		}
		return Result{}, err
	}
	if streamErr != nil {
		return Result{}, streamErr // not reached: the upload only completes after the stream's end
	}
	version, _ := chk.version()
	return Result{Key: store.Key(name), Size: size, SHA256: hex.EncodeToString(sum.Sum(nil)), RDBVersion: version}, nil
}

var errUploadStopped = errors.New("the upload stopped")

// rootCause is the innermost error of err, or the store's error code: the clean-up of an upload
// that failed often fails for the same reason (the store gone), and the whole chain of the
// SDK's error would say it twice over.
func rootCause(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			return err.Error()
		}
		err = inner
	}
}

// abortTimeout bounds the abort of a failed upload.
const abortTimeout = 30 * time.Second

// uploader is the transfer manager every upload to the store goes through.
func (s Store) uploader() *tm.Client {
	return tm.New(s.Client(), func(o *tm.Options) {
		o.PartSizeBytes = partSize
		o.Concurrency = 2
		// The abort of a failed upload gets a context of its own: the caller's may be the one
		// that was cancelled, and the parts would stay stored.
		o.FailTimeout = abortTimeout
	})
}
