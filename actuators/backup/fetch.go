package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Verify reads the snapshot stored under name and checks it against what the backup recorded
// (size and sha256) and against itself (RDB header, end opcode, CRC-64), without keeping any of
// it. A restore runs it before it touches anything: a missing, truncated or corrupted object is
// refused with the reason, and the cluster is left as it was.
func Verify(ctx context.Context, store Store, name string, want Result) error {
	return Fetch(ctx, store, name, want, io.Discard)
}

// Fetch streams the snapshot stored under name into w, checking it as Verify does. w may have
// received bytes when the check fails at the end: a caller that loads while it fetches must
// discard what it loaded on an error.
func Fetch(ctx context.Context, store Store, name string, want Result, w io.Writer) error {
	_, err := fetch(ctx, store, name, want, "", w)
	return err
}

// fetch is Fetch of the object version whose ETag is ifMatch (any when ""); it returns the ETag
// of what it read, so that a second read can be pinned to the object the first one checked.
func fetch(ctx context.Context, store Store, name string, want Result, ifMatch string, w io.Writer) (string, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String(store.Key(name))}
	if ifMatch != "" {
		in.IfMatch = aws.String(ifMatch)
	}
	out, err := store.Client().GetObject(ctx, in)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", store.Location(name), err)
	}
	defer out.Body.Close()
	// An object of another size is refused before a byte of it is read.
	if want.Size > 0 && out.ContentLength != nil && *out.ContentLength != want.Size {
		return "", fmt.Errorf("%w: %s is %d bytes, the backup recorded %d", ErrCorrupt, store.Location(name), *out.ContentLength, want.Size)
	}
	sum := sha256.New()
	var chk rdbCheck
	n, err := io.Copy(io.MultiWriter(sum, &chk, w), out.Body)
	if err != nil {
		return "", fmt.Errorf("reading %s after %d bytes: %w", store.Location(name), n, err)
	}
	if want.Size > 0 && n != want.Size {
		return "", fmt.Errorf("%w: %s is %d bytes, the backup recorded %d", ErrCorrupt, store.Location(name), n, want.Size)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); want.SHA256 != "" && got != want.SHA256 {
		return "", fmt.Errorf("%w: %s has sha256 %s, the backup recorded %s", ErrCorrupt, store.Location(name), got, want.SHA256)
	}
	if err := chk.done(); err != nil {
		return "", fmt.Errorf("%s: %w", store.Location(name), err)
	}
	return aws.ToString(out.ETag), nil
}
