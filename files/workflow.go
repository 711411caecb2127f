package files

// The file workflows: the lifecycle of one upload (FileUpload) and the
// durable removal of an object (FileDelete). Their activities are
// Lifecycle's methods (lifecycle.go); the workflows call them by name.

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// ConfirmUpdate is the name of the upload workflow's confirm Update.
const ConfirmUpdate = "confirm"

// Upload workflow results.
const (
	UploadConfirmed = "confirmed"
	UploadExpired   = "expired"
)

// ErrTypeUploadExpired is the error type of a confirm refused because the
// upload has expired.
const ErrTypeUploadExpired = "FILE_UPLOAD_EXPIRED"

// UploadInput starts the lifecycle of one file upload.
type UploadInput struct {
	TenantID string
	FileID   string
	// ExpiresAt is the upload URL's expiry; the file expires at
	// ExpiresAt + Grace if not confirmed by then.
	ExpiresAt time.Time
	Grace     time.Duration
}

// Workflow names, as registered and started: histories of running
// workflows carry them, so they must not change.
const (
	UploadWorkflowName = "FileUpload"
	DeleteWorkflowName = "FileDelete"
)

// FileUpload is the lifecycle of one upload, workflow ID = file id. It is
// pending until the confirm Update verifies the stored object (the file is
// then confirmed) or until the upload URL's expiry plus grace passes (a
// durable timer), when any orphan object is deleted and the file is marked
// expired. Confirm before the bytes are stored fails and leaves the upload
// pending, so the client may upload and confirm again.
func FileUpload(ctx workflow.Context, in UploadInput) (string, error) {
	state := "pending"
	confirming := false

	confirmCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		// The caller waits for the answer: retry a store that does not
		// answer a few times, then report it.
		ScheduleToCloseTimeout: 2 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 500 * time.Millisecond, MaximumInterval: 10 * time.Second, MaximumAttempts: 5,
			NonRetryableErrorTypes: []string{ErrTypeNotUploaded, ErrTypeMismatch, ErrTypeGone},
		},
	})
	err := workflow.SetUpdateHandlerWithOptions(ctx, ConfirmUpdate, func(ctx workflow.Context) error {
		if state == UploadConfirmed {
			return nil
		}
		confirming = true
		defer func() { confirming = false }()
		err := workflow.ExecuteActivity(confirmCtx, ActivityConfirmUpload,
			FileRef{TenantID: in.TenantID, FileID: in.FileID}).Get(ctx, nil)
		if err != nil {
			return unwrapApplicationError(err)
		}
		state = UploadConfirmed
		return nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context) error {
		if state == UploadExpired {
			return temporal.NewNonRetryableApplicationError("the upload has expired", ErrTypeUploadExpired, nil)
		}
		return nil
	}})
	if err != nil {
		return "", err
	}

	wait := in.ExpiresAt.Add(in.Grace).Sub(workflow.Now(ctx))
	if wait < 0 {
		wait = 0
	}
	confirmed, err := workflow.AwaitWithTimeout(ctx, wait, func() bool { return state == UploadConfirmed })
	if err != nil {
		return "", err
	}
	if !confirmed {
		// A confirm that is running when the timer fires decides.
		if err := workflow.Await(ctx, func() bool { return !confirming }); err != nil {
			return "", err
		}
	}
	if state != UploadConfirmed {
		state = UploadExpired
		expireCtx := workflow.WithActivityOptions(ctx, durableActivity)
		if err := workflow.ExecuteActivity(expireCtx, ActivityExpireUpload,
			FileRef{TenantID: in.TenantID, FileID: in.FileID}).Get(ctx, nil); err != nil {
			return "", err
		}
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return "", err
	}
	return state, nil
}

// The file activities, by the names Lifecycle's methods register under
// (histories carry them: they must not change). Each takes a FileRef.
const (
	ActivityConfirmUpload = "FileConfirmUpload"
	ActivityExpireUpload  = "FileExpireUpload"
	ActivityDeleteObject  = "FileDeleteObject"
)

// FileRef names one file of one tenant: the input of the file activities.
type FileRef struct {
	TenantID string
	FileID   string
}

// Error types of the file activities' non-retryable failures; the files
// service maps them to CONFLICT.
const (
	ErrTypeNotUploaded = "FILE_NOT_UPLOADED" // no object stored under the key
	ErrTypeMismatch    = "FILE_MISMATCH"     // stored size or type differs
	ErrTypeGone        = "FILE_GONE"         // expired, deleted or unknown
)

// DeleteInput names the file whose object must be removed.
type DeleteInput struct {
	TenantID string
	FileID   string
}

// DeleteWorkflowID is the ID of the delete workflow of a file.
func DeleteWorkflowID(fileID string) string { return "file-delete-" + fileID }

// FileDelete marks a file deleted and removes its object, retrying until
// the store answers (the activity has no attempt limit).
func FileDelete(ctx workflow.Context, in DeleteInput) error {
	ctx = workflow.WithActivityOptions(ctx, durableActivity)
	return workflow.ExecuteActivity(ctx, ActivityDeleteObject,
		FileRef(in)).Get(ctx, nil)
}

// durableActivity retries without limit, backing off to every 10 minutes.
var durableActivity = workflow.ActivityOptions{
	StartToCloseTimeout: time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Minute,
	},
}

// unwrapApplicationError returns the activity's application error itself,
// so the caller of the Update sees its type and message.
func unwrapApplicationError(err error) error {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return temporal.NewNonRetryableApplicationError(ae.Message(), ae.Type(), nil)
	}
	return err
}
