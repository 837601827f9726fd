// Package backup takes a snapshot of a Valkey node and stores it in S3 without a copy on any
// disk: the RDB is read the way a replica (or valkey-cli --rdb) gets it, over a replication
// SYNC, and streamed into an S3 multipart upload, its sha256 computed and its structure and
// checksum verified on the way. A stream that fails verification never completes its upload: the
// multipart upload is aborted, so no object holds a bad snapshot.
//
// The package imports the standard library, the AWS SDK for S3 and nothing of Kubernetes; where
// it runs (the operator, or a Job) is the caller's choice.
package backup
