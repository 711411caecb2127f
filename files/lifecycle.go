package files

// The file lifecycle's activities (run by the worker for the workflows in
// workflow.go) are the service's only companions writing dds.files:
// they live here, next to the table's other SQL and its states
// (pending → confirmed | expired; any → deleted, then purged).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/dds-project/dds/storage"
)

// ObjectStore is what the file activities need from a storage driver.
type ObjectStore interface {
	Head(ctx context.Context, key string) (storage.ObjectInfo, error)
	Delete(ctx context.Context, key string) error
}

// Lifecycle holds the dependencies of the file-lifecycle activities: the
// control-plane database (dds.files) and the storage driver.
type Lifecycle struct {
	DB      *sqlx.DB
	Storage ObjectStore
}

// FileConfirmUpload verifies the stored object against the requested size
// and type and marks the file confirmed (createdAt = now). Confirming a
// confirmed file succeeds again.
func (a *Lifecycle) FileConfirmUpload(ctx context.Context, ref FileRef) error {
	var row struct {
		Key    string `db:"storage_key"`
		Mime   string `db:"mime_type"`
		Size   int64  `db:"size_bytes"`
		Status string `db:"status"`
	}
	err := a.DB.GetContext(ctx, &row, `SELECT storage_key, mime_type, size_bytes, status FROM dds.files
		WHERE id = $1 AND tenant_id = $2`, ref.FileID, ref.TenantID)
	if errors.Is(err, sql.ErrNoRows) {
		return temporal.NewNonRetryableApplicationError("file not found", ErrTypeGone, nil)
	}
	if err != nil {
		return fmt.Errorf("load file: %w", err)
	}
	switch row.Status {
	case "confirmed":
		return nil
	case "pending", "uploaded":
	default:
		return temporal.NewNonRetryableApplicationError("file is "+row.Status, ErrTypeGone, nil)
	}
	info, err := a.Storage.Head(ctx, row.Key)
	if errors.Is(err, storage.ErrNotFound) {
		return temporal.NewNonRetryableApplicationError("nothing was uploaded for this file", ErrTypeNotUploaded, nil)
	}
	if err != nil {
		return err // the store did not answer: retried
	}
	if info.Size != row.Size {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("stored object is %d bytes, %d were announced", info.Size, row.Size), ErrTypeMismatch, nil)
	}
	if !strings.EqualFold(strings.TrimSpace(info.ContentType), strings.TrimSpace(row.Mime)) {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("stored object has type %q, %q was announced", info.ContentType, row.Mime), ErrTypeMismatch, nil)
	}
	res, err := a.DB.ExecContext(ctx, `UPDATE dds.files SET status = 'confirmed', created_at = now()
		WHERE id = $1 AND tenant_id = $2 AND status IN ('pending', 'uploaded')`, ref.FileID, ref.TenantID)
	if err != nil {
		return fmt.Errorf("confirm file: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var status string
		err := a.DB.GetContext(ctx, &status, `SELECT status FROM dds.files WHERE id = $1 AND tenant_id = $2`,
			ref.FileID, ref.TenantID)
		switch {
		case err == nil && status == "confirmed":
			return nil
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("reload file: %w", err) // retried, not reported as gone
		}
		return temporal.NewNonRetryableApplicationError("file is no longer pending", ErrTypeGone, nil)
	}
	return nil
}

// FileExpireUpload marks a file that was never confirmed expired and
// deletes any orphan object. A confirmed file is left alone. Idempotent.
func (a *Lifecycle) FileExpireUpload(ctx context.Context, ref FileRef) error {
	if _, err := a.DB.ExecContext(ctx, `UPDATE dds.files SET status = 'expired'
		WHERE id = $1 AND tenant_id = $2 AND status IN ('pending', 'uploaded')`, ref.FileID, ref.TenantID); err != nil {
		return fmt.Errorf("expire file: %w", err)
	}
	return a.purge(ctx, ref, "expired", "deleted")
}

// FileDeleteObject marks the file deleted (if it is not already) and
// removes its object from storage. Idempotent; retried until the store
// answers.
func (a *Lifecycle) FileDeleteObject(ctx context.Context, ref FileRef) error {
	if _, err := a.DB.ExecContext(ctx, `UPDATE dds.files SET status = 'deleted', deleted_at = coalesce(deleted_at, now())
		WHERE id = $1 AND tenant_id = $2 AND status <> 'deleted'`, ref.FileID, ref.TenantID); err != nil {
		return fmt.Errorf("mark file deleted: %w", err)
	}
	return a.purge(ctx, ref, "deleted")
}

// purge deletes the object when the file's status is one of statuses.
func (a *Lifecycle) purge(ctx context.Context, ref FileRef, statuses ...string) error {
	var row struct {
		Key    string `db:"storage_key"`
		Status string `db:"status"`
	}
	err := a.DB.GetContext(ctx, &row, `SELECT storage_key, status FROM dds.files WHERE id = $1 AND tenant_id = $2`,
		ref.FileID, ref.TenantID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load file: %w", err)
	}
	if !slices.Contains(statuses, row.Status) {
		return nil
	}
	if err := a.Storage.Delete(ctx, row.Key); err != nil {
		return err
	}
	if _, err := a.DB.ExecContext(ctx, `UPDATE dds.files SET purged_at = coalesce(purged_at, now())
		WHERE id = $1 AND tenant_id = $2`, ref.FileID, ref.TenantID); err != nil {
		return fmt.Errorf("mark file purged: %w", err)
	}
	return nil
}

// Registry is where Register adds workflows and activities: a Temporal
// worker (go.temporal.io/sdk/worker.Worker) or a test environment.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivity(a any)
}

// Register adds the file capability's workflows (upload lifecycle,
// durable delete) and their activities, over the file table in d and the
// objects in store, to a worker.
func Register(r Registry, d *sqlx.DB, store ObjectStore) {
	r.RegisterWorkflowWithOptions(FileUpload, workflow.RegisterOptions{Name: UploadWorkflowName})
	r.RegisterWorkflowWithOptions(FileDelete, workflow.RegisterOptions{Name: DeleteWorkflowName})
	r.RegisterActivity(&Lifecycle{DB: d, Storage: store})
}
