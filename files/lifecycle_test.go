package files_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"

	"github.com/dds-project/dds/files"
	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/storage/storagetest"
)

func TestFileActivities(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testenv.DB(t)
	tenant := testenv.TenantRow(t, "file-activities")
	store := storagetest.Local(t)
	a := &files.Lifecycle{DB: d, Storage: store}

	// file inserts a row (mime text/plain, 5 bytes) and optionally stores
	// an object of the given type.
	file := func(t *testing.T, storedType string) (files.FileRef, string) {
		id := uuid.NewString()
		key := tenant + "/" + id
		if _, err := d.Exec(`INSERT INTO dds.files (id, tenant_id, file_name, mime_type, size_bytes, storage_key, upload_expires_at)
			VALUES ($1, $2, 'f.txt', 'text/plain', 5, $3, now() + interval '1 hour')`, id, tenant, key); err != nil {
			t.Fatal(err)
		}
		if storedType != "" {
			u, _ := store.PresignPut(ctx, key, storedType, 5, time.Minute)
			req, _ := http.NewRequest("PUT", u, bytes.NewReader([]byte("hello")))
			req.Header.Set("Content-Type", storedType)
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("store object: %v %v", err, resp)
			}
			resp.Body.Close()
		}
		return files.FileRef{TenantID: tenant, FileID: id}, key
	}
	status := func(t *testing.T, ref files.FileRef) (s string, purged bool) {
		var row struct {
			Status string     `db:"status"`
			Purged *time.Time `db:"purged_at"`
		}
		if err := d.Get(&row, `SELECT status, purged_at FROM dds.files WHERE id = $1`, ref.FileID); err != nil {
			t.Fatal(err)
		}
		return row.Status, row.Purged != nil
	}
	exists := func(key string) bool { _, err := store.Head(ctx, key); return err == nil }
	errType := func(err error) string {
		var ae *temporal.ApplicationError
		if errors.As(err, &ae) {
			return ae.Type()
		}
		return ""
	}

	t.Run("expiry leaves a confirmed file and its object alone", func(t *testing.T) {
		ref, key := file(t, "text/plain")
		if err := a.FileConfirmUpload(ctx, ref); err != nil {
			t.Fatal(err)
		}
		if err := a.FileExpireUpload(ctx, ref); err != nil {
			t.Fatal(err)
		}
		if s, _ := status(t, ref); s != "confirmed" || !exists(key) {
			t.Fatalf("status %s exists %v", s, exists(key))
		}
	})
	t.Run("expiry is idempotent", func(t *testing.T) {
		ref, key := file(t, "text/plain")
		for i := 0; i < 2; i++ {
			if err := a.FileExpireUpload(ctx, ref); err != nil {
				t.Fatal(err)
			}
		}
		if s, purged := status(t, ref); s != "expired" || !purged || exists(key) {
			t.Fatalf("status %s purged %v exists %v", s, purged, exists(key))
		}
		if err := a.FileConfirmUpload(ctx, ref); errType(err) != files.ErrTypeGone {
			t.Fatalf("confirm after expiry: %v", err)
		}
	})
	t.Run("confirm refuses a stored type other than the requested one", func(t *testing.T) {
		ref, _ := file(t, "text/html")
		if err := a.FileConfirmUpload(ctx, ref); errType(err) != files.ErrTypeMismatch {
			t.Fatalf("confirm: %v, want %s", err, files.ErrTypeMismatch)
		}
	})
	t.Run("confirm of another tenant's file is refused", func(t *testing.T) {
		ref, _ := file(t, "text/plain")
		ref.TenantID = uuid.NewString()
		if err := a.FileConfirmUpload(ctx, ref); errType(err) != files.ErrTypeGone {
			t.Fatalf("confirm: %v, want %s", err, files.ErrTypeGone)
		}
	})
	t.Run("delete is idempotent and records the purge", func(t *testing.T) {
		ref, key := file(t, "text/plain")
		if err := a.FileConfirmUpload(ctx, ref); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if err := a.FileDeleteObject(ctx, ref); err != nil {
				t.Fatal(err)
			}
		}
		if s, purged := status(t, ref); s != "deleted" || !purged || exists(key) {
			t.Fatalf("status %s purged %v exists %v", s, purged, exists(key))
		}
	})
}
