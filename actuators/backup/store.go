package backup

import (
	"context"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Store is an S3 bucket (any S3-compatible store) and where in it backups go.
type Store struct {
	// Endpoint is the store's URL ("" for AWS itself, found from Region).
	Endpoint string
	Region   string
	Bucket   string
	// Prefix is prepended to every key (a "directory" of the bucket, with its trailing slash).
	Prefix string
	// PathStyle addresses the bucket in the path (http://host/bucket/key), which most stores
	// other than AWS need, instead of in the host name.
	PathStyle bool
	AccessKey string
	SecretKey string
	// Encryption asks the store for server-side encryption: "" (none), "AES256" or "aws:kms"
	// (with KMSKeyID).
	Encryption string
	KMSKeyID   string
	// ChecksumWhenRequired sends request checksums only where an operation requires them.
	// Recent AWS SDKs send a CRC32 checksum with every upload by default, which some
	// S3-compatible stores refuse.
	ChecksumWhenRequired bool
	// AllowPlainHTTP lets an http:// Endpoint be used; without it only https:// is (the
	// store's spec opts out explicitly, see storehttp.go).
	AllowPlainHTTP bool
	// HTTPClient, when set, carries the requests instead of the guarded client of
	// storehttp.go (tests that resolve names their own way).
	HTTPClient *http.Client
}

// Client is an S3 client for the store.
func (s Store) Client() *s3.Client {
	cfg := aws.Config{
		Region:      s.Region,
		Credentials: credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	cfg.HTTPClient = s.HTTPClient
	if s.HTTPClient == nil {
		cfg.HTTPClient = newStoreHTTPClient(nil, s.AllowPlainHTTP)
	}
	// A request the guards refused is not retried: it would be refused again.
	cfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(notRetried)}, o.Retryables...)
		})
	}
	if s.ChecksumWhenRequired {
		cfg.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		cfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = s.PathStyle
		if s.Endpoint != "" {
			o.BaseEndpoint = aws.String(s.Endpoint)
		}
	})
}

// Key is the full key of name in the store.
func (s Store) Key(name string) string { return s.Prefix + name }

// Location is the s3:// address of name, for status and messages.
func (s Store) Location(name string) string {
	return fmt.Sprintf("s3://%s/%s", s.Bucket, s.Key(name))
}

// sse is the server-side encryption of an upload, validated.
func (s Store) sse() (types.ServerSideEncryption, *string, error) {
	switch s.Encryption {
	case "":
		return "", nil, nil
	case string(types.ServerSideEncryptionAes256):
		return types.ServerSideEncryptionAes256, nil, nil
	case string(types.ServerSideEncryptionAwsKms):
		if s.KMSKeyID == "" {
			return types.ServerSideEncryptionAwsKms, nil, nil
		}
		return types.ServerSideEncryptionAwsKms, aws.String(s.KMSKeyID), nil
	}
	return "", nil, fmt.Errorf("server-side encryption %q: want AES256 or aws:kms", s.Encryption)
}

// Delete removes name from the store (retention; a backup found bad).
func (s Store) Delete(ctx context.Context, name string) error {
	_, err := s.Client().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(s.Key(name))})
	return err
}
