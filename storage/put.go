package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

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

// CreateTemp makes a temporary file where PutFile can move it into the
// store without copying it (in the store's own directory, so on its file
// system). The caller removes it when done; after PutFile its name is
// gone or another link to the stored object, either way removable.
//
// A process that ends while writing one (a worker killed mid-export)
// cannot remove it, so CreateTemp first removes the temporary files left
// unmodified for staleTemp: an export writes its archive without pause
// and stops within its heartbeat timeout (30 s) when its worker is gone,
// so a file that old has no writer. The leftover lasts until the next
// export on any process of the store.
func (l *Local) CreateTemp(pattern string) (*os.File, error) {
	dir := filepath.Join(l.dir, ".tmp")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("storage: temporary directory: %w", err)
	}
	removeStale(dir, time.Now().Add(-staleTemp))
	return os.CreateTemp(dir, pattern)
}

// staleTemp is how long a temporary file goes unmodified before
// CreateTemp takes it for a dead process's.
const staleTemp = time.Hour

// removeStale removes the files of dir last modified before cutoff. A
// file it cannot remove (gone already, or removed by another process's
// sweep) is left to the next one.
func removeStale(dir string, cutoff time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() && info.ModTime().Before(cutoff) {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// PutFile stores the size bytes of f, a complete file the caller has
// written and will not write again, under key, replacing an object stored
// there before, as Put does; a file on the store's file system (one from
// CreateTemp) is synced and linked into place instead of copied. An
// export's archive is as large as the tenant: copying it cost the export a
// tenth of its time.
func (l *Local) PutFile(ctx context.Context, key, contentType string, f *os.File, size int64) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("storage: put %s: %w", key, err)
	}
	if st.Size() != size {
		return fmt.Errorf("storage: put %s: the file has %d bytes, not %d", key, st.Size(), size)
	}
	if err := l.Delete(ctx, key); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return fmt.Errorf("storage: put %s: %w", key, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("storage: put %s: %w", key, err)
	}
	if err := os.Link(f.Name(), p); err != nil { // another file system: copy it
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		return l.Put(ctx, key, contentType, f, size)
	}
	meta, _ := json.Marshal(localMeta{ContentType: contentType})
	if err := writeFileAtomic(p+".meta", meta); err != nil {
		return fmt.Errorf("storage: put %s: %w", key, err)
	}
	return nil
}
