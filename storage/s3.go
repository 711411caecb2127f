package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// S3Config configures the S3-compatible driver.
type S3Config struct {
	Endpoint  string // e.g. http://127.0.0.1:9000; empty = AWS
	Region    string // default us-east-1
	Bucket    string
	AccessKey string
	SecretKey string
	PathStyle bool // required by most S3-compatible stores (MinIO)
}

// S3 stores objects in one bucket of an S3-compatible store.
type S3 struct {
	client  *s3.Client
	presign *s3.PresignClient
	bucket  string
}

// NewS3 builds the driver; it does not contact the store.
func NewS3(_ context.Context, c S3Config) (*S3, error) {
	if c.Bucket == "" {
		return nil, errors.New("storage: FILE_STORAGE_S3_BUCKET is required for the s3 driver")
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	opts := s3.Options{
		Region:       c.Region,
		UsePathStyle: c.PathStyle,
		// Presigned PUTs are sent by browsers and curl, which do not add the
		// SDK's flexible checksums; only compute them when an API needs one.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	if c.AccessKey != "" {
		opts.Credentials = credentials.NewStaticCredentialsProvider(c.AccessKey, c.SecretKey, "")
	}
	if c.Endpoint != "" {
		opts.BaseEndpoint = aws.String(c.Endpoint)
	}
	client := s3.New(opts)
	return &S3{client: client, presign: s3.NewPresignClient(client), bucket: c.Bucket}, nil
}

// EnsureBucket creates the bucket when it does not exist (dev and tests).
func (d *S3) EnsureBucket(ctx context.Context) error {
	if _, err := d.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &d.bucket}); err == nil {
		return nil
	}
	_, err := d.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &d.bucket})
	var owned *types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		return fmt.Errorf("storage: create bucket %s: %w", d.bucket, err)
	}
	return nil
}

// PresignPut signs Content-Type, Content-Length and If-None-Match: * into the
// URL's signed headers: the store rejects a request whose headers differ,
// and the condition makes it refuse (412) to replace an object already
// stored, so a confirmed file cannot be overwritten through its URL.
func (d *S3) PresignPut(ctx context.Context, key, contentType string, size int64, ttl time.Duration) (string, error) {
	anyETag := "*"
	req, err := d.presign.PresignPutObject(ctx, &s3.PutObjectInput{
		Bucket:        &d.bucket,
		Key:           &key,
		ContentType:   &contentType,
		ContentLength: &size,
		IfNoneMatch:   &anyETag,
	}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("storage: presign put: %w", err)
	}
	return req.URL, nil
}

// PresignGet returns a GET URL whose response carries the original name.
func (d *S3) PresignGet(ctx context.Context, key, fileName, contentType string, ttl time.Duration) (string, error) {
	in := &s3.GetObjectInput{
		Bucket:                     &d.bucket,
		Key:                        &key,
		ResponseContentDisposition: aws.String(ContentDisposition(fileName)),
	}
	if contentType != "" {
		in.ResponseContentType = &contentType
	}
	req, err := d.presign.PresignGetObject(ctx, in, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("storage: presign get: %w", err)
	}
	return req.URL, nil
}

// Head reports size and type, or ErrNotFound.
func (d *S3) Head(ctx context.Context, key string) (ObjectInfo, error) {
	out, err := d.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &d.bucket, Key: &key})
	if err != nil {
		if isS3NotFound(err) {
			return ObjectInfo{}, ErrNotFound
		}
		return ObjectInfo{}, fmt.Errorf("storage: head %s: %w", key, err)
	}
	return ObjectInfo{Size: aws.ToInt64(out.ContentLength), ContentType: aws.ToString(out.ContentType)}, nil
}

// Open streams the object with one GET.
func (d *S3) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	out, err := d.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &d.bucket, Key: &key})
	if err != nil {
		if isS3NotFound(err) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("storage: get %s: %w", key, err)
	}
	return out.Body, nil
}

// Delete removes the object; S3 answers success for a missing key.
func (d *S3) Delete(ctx context.Context, key string) error {
	_, err := d.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &d.bucket, Key: &key})
	if err != nil && !isS3NotFound(err) {
		return fmt.Errorf("storage: delete %s: %w", key, err)
	}
	return nil
}

func isS3NotFound(err error) bool {
	var nf *types.NotFound
	var nsk *types.NoSuchKey
	if errors.As(err, &nf) || errors.As(err, &nsk) {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) && (api.ErrorCode() == "NotFound" || api.ErrorCode() == "NoSuchKey") {
		return true
	}
	var re interface{ HTTPStatusCode() int }
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound
}
