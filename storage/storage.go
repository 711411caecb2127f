// Package storage owns the file-storage drivers behind DDS's presigned
// upload/download flow: an S3-compatible driver (aws-sdk-go-v2, MinIO in
// tests) and a local driver (bytes on disk, URLs HMAC-signed and served by
// the DDS server itself). Both honour the same contract: a presigned PUT binds
// the object's size and content type, so the store refuses a larger or
// different upload; an object is written once, so a second PUT to a
// still-valid URL cannot replace what was uploaded (and confirmed); a
// presigned GET carries the original file name; URLs expire.
package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"time"

	"github.com/dds-project/dds/config"
)

// ErrNotFound is returned by Head when no object is stored under the key.
var ErrNotFound = errors.New("storage: object not found")

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Size        int64
	ContentType string
}

// PutHeaders are the headers a PUT to a presigned upload URL must send. The
// S3 driver signs both (If-None-Match: * makes the store refuse to replace an
// existing object with 412); the local driver checks Content-Type and refuses
// a second write whatever the client sends.
func PutHeaders(contentType string) map[string]string {
	return map[string]string{"Content-Type": contentType, "If-None-Match": "*"}
}

// Driver is the contract both drivers implement (two implementations, and
// the conformance test table runs against it).
type Driver interface {
	// PresignPut returns a URL accepting exactly one PUT of size bytes with
	// the PutHeaders of contentType until ttl has passed. Once an object is
	// stored under key, every further PUT is refused (409 or 412).
	PresignPut(ctx context.Context, key, contentType string, size int64, ttl time.Duration) (string, error)
	// PresignGet returns a URL serving the object as an attachment named
	// fileName until ttl has passed.
	PresignGet(ctx context.Context, key, fileName, contentType string, ttl time.Duration) (string, error)
	// Head reports the stored object's size and type, or ErrNotFound.
	Head(ctx context.Context, key string) (ObjectInfo, error)
	// Delete removes the object; deleting a missing object is not an error.
	Delete(ctx context.Context, key string) error
	// Open streams the object's bytes (the worker reads import files with
	// it), or returns ErrNotFound.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
}

// Config selects and configures a driver (see config.Config FILE_STORAGE_*).
type Config struct {
	Driver string // "local" (default) or "s3"

	LocalDir    string // default ".dds/files"
	LocalSecret string // HMAC key for local URLs; generated under LocalDir when empty
	PublicURL   string // base URL of the DDS server for local URLs, e.g. http://127.0.0.1:8080

	S3Endpoint  string
	S3Region    string
	S3Bucket    string
	S3AccessKey string
	S3SecretKey string
	S3PathStyle bool
}

// Open builds the configured driver.
func Open(ctx context.Context, c Config) (Driver, error) {
	switch c.Driver {
	case "", "local":
		dir := c.LocalDir
		if dir == "" {
			// Only a hand-built Config (tests) leaves it empty; the
			// environment default is .dds/files.
			dir = filepath.Join(os.TempDir(), "dds-files")
		}
		return NewLocal(dir, c.LocalSecret, c.PublicURL)
	case "s3":
		return NewS3(ctx, S3Config{
			Endpoint: c.S3Endpoint, Region: c.S3Region, Bucket: c.S3Bucket,
			AccessKey: c.S3AccessKey, SecretKey: c.S3SecretKey, PathStyle: c.S3PathStyle,
		})
	default:
		return nil, fmt.Errorf("storage: unknown FILE_STORAGE_DRIVER %q (want local or s3)", c.Driver)
	}
}

// ContentDisposition renders an attachment disposition carrying fileName,
// with an ASCII fallback and the RFC 5987 UTF-8 form.
func ContentDisposition(fileName string) string {
	if v := mime.FormatMediaType("attachment", map[string]string{"filename": fileName}); v != "" {
		return v
	}
	return "attachment"
}

// FromConfig maps the process configuration to a driver configuration.
func FromConfig(c *config.Config) Config {
	return Config{
		Driver: c.FileStorageDriver, LocalDir: c.FileStorageLocalDir, LocalSecret: c.FileStorageLocalSecret,
		PublicURL: c.PublicURL, S3Endpoint: c.FileStorageS3Endpoint, S3Region: c.FileStorageS3Region,
		S3Bucket: c.FileStorageS3Bucket, S3AccessKey: c.FileStorageS3AccessKey,
		S3SecretKey: c.FileStorageS3SecretKey, S3PathStyle: c.FileStorageS3PathStyle,
	}
}

// EnsureBucket creates the S3 bucket when d is the s3 driver and the bucket
// is missing (dev and `make run`); a no-op for the local driver.
func EnsureBucket(ctx context.Context, d Driver) error {
	if s, ok := d.(*S3); ok {
		return s.EnsureBucket(ctx)
	}
	return nil
}
