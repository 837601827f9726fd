package backup

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// AbortStale aborts the multipart uploads under the store's prefix that began before cutoff and
// returns how many. A backup aborts its own upload when it fails; an operator killed in the
// middle of one cannot, and the parts it sent stay in the store (and are billed) until someone
// aborts them. The operator runs this before each backup with the time it started as cutoff: an
// upload older than the operator's own start is no backup in progress.
func AbortStale(ctx context.Context, store Store, cutoff time.Time) (int, error) {
	return abortUploads(ctx, store, store.Prefix, func(u types.MultipartUpload) bool {
		return u.Initiated != nil && u.Initiated.Before(cutoff)
	})
}

// abortUploadsOf aborts every multipart upload still open for key, and returns how many it
// aborted. The transfer manager aborts the upload it knows of, but a cancel that lands while
// CreateMultipartUpload's answer is on its way leaves an upload the store opened and the client
// never learnt the ID of. A key is written by one backup only (TakeAll refuses a name used
// before), so an open upload of it is this backup's own.
//
// A part the store was still writing when the upload was aborted (by the transfer manager or
// here) can bring it back: S3's documentation says to abort again until nothing is left, and
// versitygw re-creates the upload's directory to link such a part into. So the store is asked
// again after a pause, until an answer after a pause finds nothing, or ctx ends.
func abortUploadsOf(ctx context.Context, store Store, key string) (int, error) {
	total := 0
	for round := 0; ; round++ {
		n, err := abortUploads(ctx, store, key, func(u types.MultipartUpload) bool {
			return aws.ToString(u.Key) == key
		})
		total += n
		if err != nil || (round > 0 && n == 0) {
			return total, err
		}
		select {
		case <-ctx.Done():
			return total, fmt.Errorf("aborting the uploads of s3://%s/%s: %w", store.Bucket, key, ctx.Err())
		case <-time.After(abortRecheck):
		}
	}
}

// abortRecheck is the pause before the store is asked again whether an aborted upload is gone:
// longer than a part already received takes to be written.
const abortRecheck = time.Second

// abortUploads aborts the multipart uploads under prefix that abort says to, and returns how
// many it aborted.
func abortUploads(ctx context.Context, store Store, prefix string, abort func(types.MultipartUpload) bool) (int, error) {
	client := store.Client()
	aborted := 0
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(store.Bucket), Prefix: aws.String(prefix)}
	for {
		out, err := client.ListMultipartUploads(ctx, in)
		if err != nil {
			return aborted, fmt.Errorf("listing the uploads under s3://%s/%s: %w", store.Bucket, prefix, err)
		}
		for _, u := range out.Uploads {
			if !abort(u) {
				continue
			}
			if _, err := client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(store.Bucket), Key: u.Key, UploadId: u.UploadId}); err != nil {
				return aborted, fmt.Errorf("aborting the upload of s3://%s/%s: %w", store.Bucket, aws.ToString(u.Key), err)
			}
			aborted++
		}
		if !aws.ToBool(out.IsTruncated) {
			return aborted, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}
