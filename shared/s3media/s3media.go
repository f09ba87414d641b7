// Package s3media keeps posts' attachments in Amazon S3 for the AWS
// runtime: the publishing.MediaStore the publisher reads them from, and
// the writer the operator CLI imports them with. An attachment's ref is
// its content hash and extension (sha256hex.png, as the embedded runtime's
// media directory names files), so the object key depends on the bytes
// alone: importing the same file twice writes the same object, and a ref
// never names other bytes than the ones the post's fingerprint hashed.
package s3media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// Interface guards.
var (
	_ publishing.MediaStore = (*Store)(nil)
	_ publishing.MediaURLs  = (*Store)(nil)
)

// Prefix is where attachments are kept in the bucket: media/<ref>.
const Prefix = "media/"

// MaxBytes bounds what ReadMedia reads (the CLI imports at most 16 MB).
const MaxBytes = 32 << 20

// refPattern is a ref the CLI writes: a SHA-256 in hex and an image
// extension. Anything else is refused before it reaches S3.
var refPattern = regexp.MustCompile(`^[0-9a-f]{64}\.(png|jpg|gif|webp)$`)

// API is the part of the S3 client the store calls.
type API interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

var _ API = (*s3.Client)(nil)

// Presigner signs a GetObject request into a URL anyone can fetch until it
// expires (s3.PresignClient).
type Presigner interface {
	PresignGetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.PresignOptions)) (*v4.PresignedHTTPRequest, error)
}

var _ Presigner = (*s3.PresignClient)(nil)

// URLLifetime is how long a URL from MediaURL can be fetched. A platform
// fetches an attachment when the post's container is created, seconds
// after the URL is made; an hour leaves room for its processing queue and
// is short enough that a URL copied from a log is soon worthless. A URL
// signed with temporary credentials (a Lambda function's role) stops
// working when they expire, if that comes first.
const URLLifetime = time.Hour

// Store reads and writes attachments in one bucket.
type Store struct {
	api     API
	presign Presigner
	bucket  string
}

// New returns the store on bucket; it makes no call. It signs URLs
// (MediaURL) with presign, s3.NewPresignClient of the client; nil means
// it cannot, and MediaURL fails.
func New(api API, presign Presigner, bucket string) (*Store, error) {
	if api == nil || bucket == "" {
		return nil, errors.New("s3media: no S3 client or no bucket")
	}
	return &Store{api: api, presign: presign, bucket: bucket}, nil
}

// MediaURL is a presigned GET URL of the attachment, valid for
// URLLifetime, for a platform that fetches attachments itself (Threads).
// It makes no call: a ref that names no object gives a URL that answers
// 404, which the platform reports as a failed container.
func (s *Store) MediaURL(ctx context.Context, ref string) (string, error) {
	if err := checkRef(ref); err != nil {
		return "", err
	}
	if s.presign == nil {
		return "", errors.New("s3media: this store cannot sign URLs (built without a presigner)")
	}
	req, err := s.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(Prefix + ref)},
		s3.WithPresignExpires(URLLifetime))
	if err != nil {
		return "", fmt.Errorf("sign a URL of media %s in s3://%s: %w", ref, s.bucket, err)
	}
	return req.URL, nil
}

// Bucket is the store's bucket.
func (s *Store) Bucket() string { return s.bucket }

func checkRef(ref string) error {
	if !refPattern.MatchString(ref) {
		return fmt.Errorf("media ref %q is not a SHA-256 with an image extension: %w", ref, publishing.ErrMediaInvalid)
	}
	return nil
}

// ReadMedia reads an attachment's bytes. A missing object is an error
// wrapping post.ErrNotFound, a ref that is no content hash or an object
// over MaxBytes one wrapping publishing.ErrMediaInvalid; any other error
// (S3's 503 SlowDown past the SDK's retries, a body cut mid-way, the
// deadline) is transient and wraps neither.
func (s *Store) ReadMedia(ctx context.Context, ref string) ([]byte, error) {
	if err := checkRef(ref); err != nil {
		return nil, err
	}
	out, err := s.api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(Prefix + ref)})
	if errors.As(err, new(*types.NoSuchKey)) {
		return nil, fmt.Errorf("media %s in s3://%s: %w", ref, s.bucket, post.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read media %s from s3://%s: %w", ref, s.bucket, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read media %s from s3://%s: %w", ref, s.bucket, err)
	}
	if len(b) > MaxBytes {
		return nil, fmt.Errorf("media %s in s3://%s is over %d bytes: %w", ref, s.bucket, MaxBytes, publishing.ErrMediaInvalid)
	}
	return b, nil
}

// PutMedia stores an attachment under its ref. The key depends on the
// bytes only, so writing it again (a retried import, the same image in
// another post) writes the same object.
func (s *Store) PutMedia(ctx context.Context, ref, contentType string, data []byte) error {
	if err := checkRef(ref); err != nil {
		return err
	}
	_, err := s.api.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(Prefix + ref), Body: bytes.NewReader(data),
		ContentType: aws.String(contentType), ContentLength: aws.Int64(int64(len(data))),
	})
	if err != nil {
		return fmt.Errorf("store media %s in s3://%s: %w", ref, s.bucket, err)
	}
	return nil
}

// WriteMedia stores an uploaded attachment under its ref (PutMedia with
// its content type): the API's POST /v1/media on AWS.
func (s *Store) WriteMedia(ctx context.Context, m post.Media, data []byte) error {
	return s.PutMedia(ctx, m.Ref, m.ContentType, data)
}

// MediaSize is a stored attachment's size in bytes (one HeadObject: IAM's
// s3:GetObject), an error wrapping post.ErrNotFound when there is none
// and one wrapping publishing.ErrMediaInvalid for a ref that is no
// content hash.
func (s *Store) MediaSize(ctx context.Context, ref string) (int64, error) {
	if err := checkRef(ref); err != nil {
		return 0, err
	}
	out, err := s.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(Prefix + ref)})
	if errors.As(err, new(*types.NotFound)) || errors.As(err, new(*types.NoSuchKey)) {
		return 0, fmt.Errorf("media %s in s3://%s: %w", ref, s.bucket, post.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("read the size of media %s in s3://%s: %w", ref, s.bucket, err)
	}
	return aws.ToInt64(out.ContentLength), nil
}
