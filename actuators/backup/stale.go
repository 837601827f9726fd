package backup

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// AbortStale aborts the multipart uploads under the store's prefix that began before cutoff and
// returns how many. A backup aborts its own upload when it fails; an operator killed in the
// middle of one cannot, and the parts it sent stay in the store (and are billed) until someone
// aborts them. The operator runs this before each backup with the time it started as cutoff: an
// upload older than the operator's own start is no backup in progress.
func AbortStale(ctx context.Context, store Store, cutoff time.Time) (int, error) {
	client := store.Client()
	aborted := 0
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(store.Bucket), Prefix: aws.String(store.Prefix)}
	for {
		out, err := client.ListMultipartUploads(ctx, in)
		if err != nil {
			return aborted, fmt.Errorf("listing the uploads under %s: %w", store.Location(""), err)
		}
		for _, u := range out.Uploads {
			if u.Initiated == nil || !u.Initiated.Before(cutoff) {
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
