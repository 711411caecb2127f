package storage

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Putter is a driver that the server side writes objects with (the
// archives of tenant exports), beside the presigned uploads of clients.
// Both drivers implement it.
type Putter interface {
	// Put stores size bytes of body under key, replacing an object stored
	// there before (a step that writes it again after a crash). body is
	// read once, from its current offset.
	Put(ctx context.Context, key, contentType string, body io.ReadSeeker, size int64) error
}

// Put implements Putter.
func (l *Local) Put(ctx context.Context, key, contentType string, body io.ReadSeeker, size int64) error {
	if err := l.Delete(ctx, key); err != nil {
		return err
	}
	return l.store(localToken{Op: "put", Key: key, Type: contentType, Size: size}, body)
}

// Put implements Putter: one PutObject with a known length (the SDK signs
// a seekable body without holding it in memory).
func (d *S3) Put(ctx context.Context, key, contentType string, body io.ReadSeeker, size int64) error {
	_, err := d.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &d.bucket, Key: &key, Body: body,
		ContentType: &contentType, ContentLength: &size})
	if err != nil {
		return fmt.Errorf("storage: put %s: %w", key, err)
	}
	return nil
}
