package backup

import (
	"context"
	"errors"
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
	// AccessKey and SecretKey are the store's static keys; CredentialsSecret names where they
	// came from (namespace/name, for messages).
	AccessKey, SecretKey string
	CredentialsSecret    string
	// Ambient, for a store without static keys, signs its requests with the process's own
	// identity (the SDK's default chain). Nil: a store without keys has no credentials.
	Ambient *AmbientCredentials
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
	cfg := aws.Config{Region: s.Region, Credentials: s.credentials()}
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

// credentials are the store's static keys, or without them the process's default chain when
// the store may use it. Never both: a store whose keys are wrong fails with them.
func (s Store) credentials() aws.CredentialsProvider {
	if s.AccessKey == "" && s.SecretKey == "" {
		if s.Ambient != nil {
			return ambientProvider{a: s.Ambient, region: s.Region}
		}
		return noCredentials{}
	}
	return credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, "")
}

// noCredentials refuses every request of a store with neither keys nor the default chain,
// rather than letting the SDK send it unsigned.
type noCredentials struct{}

func (noCredentials) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{}, errors.New("no credentials: the store has no keys and may not use the operator's default credential chain")
}

// CredentialsSource says, for status and Events, whose credentials the store's requests carry.
func (s Store) CredentialsSource() string {
	switch {
	case s.AccessKey != "" || s.SecretKey != "":
		if s.CredentialsSecret != "" {
			return "the Secret " + s.CredentialsSecret
		}
		return "static keys"
	case s.Ambient != nil:
		return "the operator's default chain"
	}
	return "none"
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
