package backup

import (
	"context"
	"fmt"
	"path"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// DeleteBackup removes every object of a backup's directory, the manifest first: a deletion cut
// short leaves an incomplete backup, which is never restored, rather than a manifest naming
// files that are gone. Deleting a backup that is gone already is no error (retention repeats
// it after an operator restart).
func DeleteBackup(ctx context.Context, store Store, backup string) (int, error) {
	if err := store.Delete(ctx, path.Join(backup, ManifestName)); err != nil {
		return 0, fmt.Errorf("deleting the manifest of %s: %w", store.Location(backup+"/"), err)
	}
	client := store.Client()
	deleted := 1
	in := &s3.ListObjectsV2Input{Bucket: aws.String(store.Bucket), Prefix: aws.String(store.Key(backup + "/"))}
	for {
		out, err := client.ListObjectsV2(ctx, in)
		if err != nil {
			return deleted, fmt.Errorf("listing %s: %w", store.Location(backup+"/"), err)
		}
		for _, o := range out.Contents {
			if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(store.Bucket), Key: o.Key}); err != nil {
				return deleted, fmt.Errorf("deleting s3://%s/%s: %w", store.Bucket, aws.ToString(o.Key), err)
			}
			deleted++
		}
		if !aws.ToBool(out.IsTruncated) {
			return deleted, nil
		}
		in.ContinuationToken = out.NextContinuationToken
	}
}
