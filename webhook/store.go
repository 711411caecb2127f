package webhook

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/outbox"
)

// Delivery statuses.
const (
	StatusPending   = "pending"   // row committed, first attempt not yet recorded
	StatusQueued    = "queued"    // waiting for a slot of its webhook's rate limit (pace.go)
	StatusSucceeded = "succeeded" // a 2xx was received
	StatusRetrying  = "retrying"  // failed; a retry workflow owns it
	StatusFailed    = "failed"    // the fifth retry failed too
	StatusCancelled = "cancelled" // the webhook was deactivated or deleted before success
)

// Webhook is one subscription (a row of dds.webhooks).
type Webhook struct {
	ID            string         `db:"id"`
	TenantID      string         `db:"tenant_id"`
	SchemaName    string         `db:"schema_name"`
	TargetURL     string         `db:"target_url"`
	EventTypes    pq.StringArray `db:"event_types"`
	EntityNames   pq.StringArray `db:"entity_names"` // nil: every entity
	SigningSecret string         `db:"signing_secret"`
	IsActive      bool           `db:"is_active"`
	CreatedAt     time.Time      `db:"created_at"`
	UpdatedAt     time.Time      `db:"updated_at"`
	LastTriggered *time.Time     `db:"last_triggered"`
	AttemptCount  int64          `db:"attempt_count"`
	SuccessCount  int64          `db:"success_count"`
	// FailingSince is the time of the first of an unbroken run of failed
	// attempts (nil after a success).
	FailingSince *time.Time `db:"failing_since"`
	// DisabledReason says why an inactive webhook is inactive (one of the
	// Disabled* constants); DisabledAt when. Both nil while active.
	DisabledReason *string    `db:"disabled_reason"`
	DisabledAt     *time.Time `db:"disabled_at"`
	// RateLimit is the most deliveries per second this webhook receives
	// (nil: unlimited); see pace.go.
	RateLimit *int `db:"rate_limit"`
}

// Why a webhook was disabled.
const (
	DisabledGone    = "gone"    // the receiver answered 410 Gone
	DisabledFailing = "failing" // every attempt failed for DisableAfter
	DisabledByUser  = "user"    // isActive set to false through the API
)

// DisableAfter is how long a webhook may fail without a single success
// before it is disabled.
const DisableAfter = 5 * 24 * time.Hour

// Matches is the subscription rule (event type, entity names) plus the schema filter: the event's
// type is subscribed, its entity is listed (or no list is set) and, when
// the webhook names a schema, the event belongs to it. An operational
// event matches on its type alone.
func (w *Webhook) Matches(ev *outbox.Event) bool {
	if !w.IsActive || !slices.Contains(w.EventTypes, ev.Type) {
		return false
	}
	if outbox.IsOperational(ev.Type) {
		return true // about the tenant's webhooks: no schema, no entity to filter on
	}
	if w.SchemaName != "" && w.SchemaName != ev.SchemaName {
		return false
	}
	if w.EntityNames == nil {
		return true
	}
	for _, n := range ev.Entities() { // a relationship event concerns both ends
		if slices.Contains(w.EntityNames, n) {
			return true
		}
	}
	return false
}

// SuccessRate is the fraction of delivery attempts answered with a 2xx; 1
// while no attempt was made (nothing has failed).
func (w *Webhook) SuccessRate() float64 {
	if w.AttemptCount == 0 {
		return 1
	}
	return float64(w.SuccessCount) / float64(w.AttemptCount)
}

// Store is the Postgres store of webhooks, deliveries and attempts. Every
// method taking a tenantID is scoped to it: another tenant's id is NOT_FOUND.
type Store struct{ db *sqlx.DB }

// NewStore returns a Store over db.
func NewStore(db *sqlx.DB) *Store { return &Store{db: db} }

// PruneFinished deletes at most limit finished deliveries (succeeded,
// failed or cancelled; their attempts go with them) last touched longer
// ago than age, and returns how many it deleted. Deliveries still
// retrying are never pruned; webhook counters live on the webhook row.
func (s *Store) PruneFinished(ctx context.Context, age time.Duration, limit int) (int64, error) {
	interval := (time.Duration(age.Seconds()) * time.Second).String()
	res, err := s.db.ExecContext(ctx, `DELETE FROM dds.webhook_deliveries WHERE id IN (SELECT id FROM dds.webhook_deliveries
		WHERE status IN ('succeeded', 'failed', 'cancelled') AND updated_at < now() - $1::interval LIMIT $2)`, interval, limit)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// DB is the underlying pool.
func (s *Store) DB() *sqlx.DB { return s.db }

const webhookCols = `id, tenant_id, schema_name, target_url, event_types, entity_names, signing_secret,
	is_active, created_at, updated_at, last_triggered, attempt_count, success_count, failing_since, disabled_reason, disabled_at, rate_limit`

var entityNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,62}$`)

// CreateInput is the body of POST /api/v1/webhooks.
type CreateInput struct {
	TargetURL   string
	EventTypes  []string
	EntityNames []string // nil or empty: every entity
	SchemaName  string   // empty: every schema of the tenant
	RateLimit   *int     // deliveries per second; nil: unlimited
}

// ValidateEventTypes checks a non-empty list of event types a webhook may
// subscribe to (record events and operational events).
func ValidateEventTypes(ts []string) *apperr.FieldError {
	all := strings.Join(outbox.WebhookTypes(), ", ")
	if len(ts) == 0 {
		return &apperr.FieldError{Field: "eventTypes", Message: "must list at least one of " + all}
	}
	for _, t := range ts {
		if !outbox.ValidWebhookType(t) {
			return &apperr.FieldError{Field: "eventTypes", Message: "unknown event type " + quote(t) + "; must be one of " + all}
		}
	}
	return nil
}

// MaxRateLimit is the largest rateLimit accepted (deliveries per second).
const MaxRateLimit = 1000

// ValidateRateLimit checks a rate limit: nil (unlimited) or 1..MaxRateLimit.
func ValidateRateLimit(n *int) *apperr.FieldError {
	if n != nil && (*n < 1 || *n > MaxRateLimit) {
		return &apperr.FieldError{Field: "rateLimit", Message: fmt.Sprintf("must be an integer from 1 to %d (deliveries per second), or null for no limit", MaxRateLimit)}
	}
	return nil
}

// ValidateEntityNames checks entity name syntax.
func ValidateEntityNames(ns []string) *apperr.FieldError {
	for _, n := range ns {
		if !entityNameRE.MatchString(n) {
			return &apperr.FieldError{Field: "entityNames", Message: "invalid entity name " + quote(n)}
		}
	}
	return nil
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return `"` + s + `"`
}

func dedupe(ss []string) []string {
	out := slices.Clone(ss)
	slices.Sort(out)
	return slices.Compact(out)
}

func nullableList(ss []string) any {
	if len(ss) == 0 {
		return nil
	}
	return dedupe(ss)
}

// validateTarget returns the field errors of a target URL: its syntax, then
// (unless allowPrivate) its host.
func validateTarget(target string, allowPrivate bool) []apperr.FieldError {
	err := ValidateTargetURL(target)
	if err == nil {
		err = ValidateTargetHost(target, allowPrivate)
	}
	if err != nil {
		return apperr.As(err).Details
	}
	return nil
}

// checkSchema appends a field error to errs when name is set and names no
// schema of the tenant.
func (s *Store) checkSchema(ctx context.Context, tenantID, name string, errs []apperr.FieldError) ([]apperr.FieldError, error) {
	if name == "" {
		return errs, nil
	}
	var n int
	if err := s.db.GetContext(ctx, &n, `SELECT count(*) FROM dds.schemas WHERE tenant_id = $1 AND name = $2`, tenantID, name); err != nil {
		return nil, apperr.Wrap(err, "check schema")
	}
	if n == 0 {
		errs = append(errs, apperr.FieldError{Field: "schemaName", Message: "no schema named " + quote(name)})
	}
	return errs, nil
}

// Create validates in and stores a new active webhook with a fresh secret.
func (s *Store) Create(ctx context.Context, tenantID string, in CreateInput, allowPrivate bool) (*Webhook, error) {
	errs := validateTarget(in.TargetURL, allowPrivate)
	if fe := ValidateEventTypes(in.EventTypes); fe != nil {
		errs = append(errs, *fe)
	}
	if fe := ValidateEntityNames(in.EntityNames); fe != nil {
		errs = append(errs, *fe)
	}
	if fe := ValidateRateLimit(in.RateLimit); fe != nil {
		errs = append(errs, *fe)
	}
	errs, err := s.checkSchema(ctx, tenantID, in.SchemaName, errs)
	if err != nil {
		return nil, err
	}
	if err := apperr.Fields(errs); err != nil {
		return nil, err
	}
	secret, err := NewSecret()
	if err != nil {
		return nil, apperr.Wrap(err, "create webhook")
	}
	var w Webhook
	// The pacing row exists from the moment a rate limit is set (pace.go).
	err = s.db.GetContext(ctx, &w, `WITH w AS (INSERT INTO dds.webhooks (tenant_id, schema_name, target_url, event_types, entity_names, signing_secret, rate_limit)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+webhookCols+`),
		p AS (INSERT INTO dds.webhook_pacing (webhook_id) SELECT id FROM w WHERE rate_limit IS NOT NULL)
		SELECT * FROM w`,
		tenantID, in.SchemaName, in.TargetURL, dedupe(in.EventTypes), nullableList(in.EntityNames), secret, in.RateLimit)
	if err != nil {
		return nil, apperr.Wrap(err, "create webhook")
	}
	return &w, nil
}

// List returns the tenant's webhooks, newest first.
func (s *Store) List(ctx context.Context, tenantID string) ([]Webhook, error) {
	out := []Webhook{}
	if err := s.db.SelectContext(ctx, &out, `SELECT `+webhookCols+` FROM dds.webhooks WHERE tenant_id = $1 ORDER BY created_at DESC, id`, tenantID); err != nil {
		return nil, apperr.Wrap(err, "list webhooks")
	}
	return out, nil
}

// Get returns one webhook of the tenant.
func (s *Store) Get(ctx context.Context, tenantID, id string) (*Webhook, error) {
	if !validUUID(id) {
		return nil, apperr.New(apperr.NotFound, "webhook %s not found", id)
	}
	var w Webhook
	err := s.db.GetContext(ctx, &w, `SELECT `+webhookCols+` FROM dds.webhooks WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "webhook %s not found", id)
	}
	if err != nil {
		return nil, apperr.Wrap(err, "get webhook")
	}
	return &w, nil
}

// Patch is a partial update; nil fields are left unchanged. EntityNames set
// to an empty list clears the filter (every entity).
type Patch struct {
	TargetURL   *string
	EventTypes  *[]string
	EntityNames *[]string
	SchemaName  *string
	IsActive    *bool
	// SetRateLimit applies RateLimit (nil: unlimited).
	SetRateLimit bool
	RateLimit    *int
}

// Update applies p. Deactivating stops new deliveries at once and makes
// pending retries cancel themselves before their next attempt.
func (s *Store) Update(ctx context.Context, tenantID, id string, p Patch, allowPrivate bool) (*Webhook, error) {
	w, err := s.Get(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	var errs []apperr.FieldError
	if p.TargetURL != nil {
		errs = append(errs, validateTarget(*p.TargetURL, allowPrivate)...)
		w.TargetURL = *p.TargetURL
	}
	if p.EventTypes != nil {
		if fe := ValidateEventTypes(*p.EventTypes); fe != nil {
			errs = append(errs, *fe)
		}
		w.EventTypes = dedupe(*p.EventTypes)
	}
	if p.EntityNames != nil {
		if fe := ValidateEntityNames(*p.EntityNames); fe != nil {
			errs = append(errs, *fe)
		}
		w.EntityNames = nil
		if len(*p.EntityNames) > 0 {
			w.EntityNames = dedupe(*p.EntityNames)
		}
	}
	if p.SchemaName != nil {
		if errs, err = s.checkSchema(ctx, tenantID, *p.SchemaName, errs); err != nil {
			return nil, err
		}
		w.SchemaName = *p.SchemaName
	}
	if p.IsActive != nil {
		w.IsActive = *p.IsActive
	}
	if p.SetRateLimit {
		if fe := ValidateRateLimit(p.RateLimit); fe != nil {
			errs = append(errs, *fe)
		}
		w.RateLimit = p.RateLimit
	}
	if err := apperr.Fields(errs); err != nil {
		return nil, err
	}
	// Activating clears the disabled reason and the failure run; a user
	// deactivating an active webhook is the reason.
	err = s.db.GetContext(ctx, w, `WITH w AS (UPDATE dds.webhooks SET target_url = $3, event_types = $4, entity_names = $5,
		schema_name = $6, is_active = $7, rate_limit = $8, updated_at = now(),
		disabled_reason = CASE WHEN $7 THEN NULL WHEN is_active THEN 'user' ELSE disabled_reason END,
		disabled_at = CASE WHEN $7 THEN NULL WHEN is_active THEN now() ELSE disabled_at END,
		failing_since = CASE WHEN $7 AND NOT is_active THEN NULL ELSE failing_since END
		WHERE tenant_id = $1 AND id = $2 RETURNING `+webhookCols+`),
		p AS (INSERT INTO dds.webhook_pacing (webhook_id) SELECT id FROM w WHERE rate_limit IS NOT NULL ON CONFLICT DO NOTHING)
		SELECT * FROM w`,
		tenantID, id, w.TargetURL, []string(w.EventTypes), nullableList(w.EntityNames), w.SchemaName, w.IsActive, w.RateLimit)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "webhook %s not found", id)
	}
	if err != nil {
		return nil, apperr.Wrap(err, "update webhook")
	}
	return w, nil
}

// Delete removes a webhook with its deliveries and attempt log. Retry
// workflows find their delivery gone and stop.
func (s *Store) Delete(ctx context.Context, tenantID, id string) error {
	if !validUUID(id) {
		return apperr.New(apperr.NotFound, "webhook %s not found", id)
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM dds.webhooks WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err != nil {
		return apperr.Wrap(err, "delete webhook")
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return apperr.New(apperr.NotFound, "webhook %s not found", id)
	}
	return nil
}

// ActiveFor returns the active webhooks of the given tenants.
func (s *Store) ActiveFor(ctx context.Context, tenantIDs []string) ([]Webhook, error) {
	var out []Webhook
	err := s.db.SelectContext(ctx, &out, `SELECT `+webhookCols+` FROM dds.webhooks WHERE is_active AND tenant_id = ANY($1::uuid[])`, tenantIDs)
	return out, err
}

// Delivery is one (webhook, event) delivery.
type Delivery struct {
	ID            string     `db:"id" json:"id"`
	WebhookID     string     `db:"webhook_id" json:"webhookId"`
	TenantID      string     `db:"tenant_id" json:"-"`
	EventID       string     `db:"event_id" json:"eventId"`
	EventType     string     `db:"event_type" json:"eventType"`
	EntityName    string     `db:"entity_name" json:"entityName"`
	Body          []byte     `db:"body" json:"-"`
	Status        string     `db:"status" json:"status"`
	Attempts      int        `db:"attempts" json:"attempts"`
	LastAttemptAt *time.Time `db:"last_attempt_at" json:"lastAttemptAt"`
	NextAttemptAt *time.Time `db:"next_attempt_at" json:"nextAttemptAt"`
	CreatedAt     time.Time  `db:"created_at" json:"createdAt"`
	UpdatedAt     time.Time  `db:"updated_at" json:"updatedAt"`
}

const deliveryCols = `id, webhook_id, tenant_id, event_id, event_type, entity_name, body, status, attempts,
	last_attempt_at, next_attempt_at, created_at, updated_at`

// AttemptLog is one recorded attempt.
type AttemptLog struct {
	Attempt       int        `db:"attempt" json:"attempt"`
	StatusCode    *int       `db:"status_code" json:"statusCode"`
	LatencyMs     int        `db:"latency_ms" json:"latencyMs"`
	Error         *string    `db:"error" json:"error"`
	AttemptedAt   time.Time  `db:"attempted_at" json:"attemptedAt"`
	NextAttemptAt *time.Time `db:"next_attempt_at" json:"nextAttemptAt"`
}

// DeliveryLog is a delivery with its attempts, as the deliveries endpoint shows it.
type DeliveryLog struct {
	Delivery
	AttemptLog []AttemptLog `json:"attemptLog"`
}

// Deliveries returns the latest deliveries of a webhook (newest first)
// with their attempts; status, when set, filters on the delivery status.
func (s *Store) Deliveries(ctx context.Context, tenantID, webhookID string, limit int, status string) ([]DeliveryLog, error) {
	if _, err := s.Get(ctx, tenantID, webhookID); err != nil {
		return nil, err
	}
	var ds []struct {
		Delivery
		// A first attempt that succeeded, kept on the row instead of in
		// the attempt log (migration 00052): shown as attempt 1.
		FirstCode *int       `db:"first_status_code"`
		FirstMs   *int       `db:"first_latency_ms"`
		FirstAt   *time.Time `db:"first_attempted_at"`
	}
	err := s.db.SelectContext(ctx, &ds, `SELECT `+deliveryCols+`, first_status_code, first_latency_ms, first_attempted_at
		FROM dds.webhook_deliveries
		WHERE webhook_id = $1 AND tenant_id = $2 AND ($4 = '' OR status = $4) ORDER BY created_at DESC, id LIMIT $3`,
		webhookID, tenantID, limit, status)
	if err != nil {
		return nil, apperr.Wrap(err, "list deliveries")
	}
	out := make([]DeliveryLog, len(ds))
	ids := make([]string, len(ds))
	idx := map[string]int{}
	for i, d := range ds {
		out[i] = DeliveryLog{Delivery: d.Delivery, AttemptLog: []AttemptLog{}}
		if d.FirstAt != nil {
			out[i].AttemptLog = append(out[i].AttemptLog, AttemptLog{Attempt: 1, StatusCode: d.FirstCode, LatencyMs: derefInt(d.FirstMs),
				AttemptedAt: *d.FirstAt})
		}
		ids[i] = d.ID
		idx[d.ID] = i
	}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.db.QueryxContext(ctx, `SELECT delivery_id, attempt, status_code, latency_ms, error, attempted_at, next_attempt_at
		FROM dds.webhook_attempts WHERE delivery_id = ANY($1::uuid[]) ORDER BY delivery_id, attempt, id`, ids)
	if err != nil {
		return nil, apperr.Wrap(err, "list attempts")
	}
	defer rows.Close()
	for rows.Next() {
		var a AttemptLog
		var did string
		if err := rows.Scan(&did, &a.Attempt, &a.StatusCode, &a.LatencyMs, &a.Error, &a.AttemptedAt, &a.NextAttemptAt); err != nil {
			return nil, apperr.Wrap(err, "list attempts")
		}
		out[idx[did]].AttemptLog = append(out[idx[did]].AttemptLog, a)
	}
	return out, rows.Err()
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// GetDelivery returns one delivery of the tenant's webhook.
func (s *Store) GetDelivery(ctx context.Context, tenantID, webhookID, deliveryID string) (*Delivery, error) {
	if !validUUID(webhookID) || !validUUID(deliveryID) {
		return nil, apperr.New(apperr.NotFound, "delivery %s not found", deliveryID)
	}
	var d Delivery
	err := s.db.GetContext(ctx, &d, `SELECT `+deliveryCols+` FROM dds.webhook_deliveries WHERE id = $1 AND webhook_id = $2 AND tenant_id = $3`,
		deliveryID, webhookID, tenantID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "delivery %s not found", deliveryID)
	}
	if err != nil {
		return nil, apperr.Wrap(err, "get delivery")
	}
	return &d, nil
}

// Reopen marks a delivery as retrying again (manual replay) unless it is
// already being retried; it reports whether a retry schedule must start.
func (s *Store) Reopen(ctx context.Context, deliveryID string) (bool, error) {
	// No workflow is recorded: should the caller fail to start one, the
	// worker's hand-over starts it.
	res, err := s.db.ExecContext(ctx, `UPDATE dds.webhook_deliveries SET status = 'retrying', next_attempt_at = now(), updated_at = now(),
		workflow_started_at = NULL
		WHERE id = $1 AND status IN ('succeeded', 'failed', 'cancelled')`, deliveryID)
	if err != nil {
		return false, apperr.Wrap(err, "reopen delivery")
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// AttemptRecord is the outcome of one attempt to record.
type AttemptRecord struct {
	DeliveryID string
	WebhookID  string
	Attempt    int // 1 = first
	Result     Result
	At         time.Time
	Next       *time.Time // next attempt time; nil when none
	Status     string     // the delivery's new status
}

// RecordAttempts logs attempts, updates their deliveries and the webhooks'
// counters (lastTriggered, successRate, the failure run) and, in the same
// transaction, marks relayedEvents as relayed. A delivery already
// succeeded stays so. A delivery deleted meanwhile (its webhook was
// deleted during the attempt) is skipped, never an error. A 410 answer
// disables its webhook (DisabledGone), and so does a failure that extends
// an unbroken run of failures past DisableAfter (DisabledFailing).
func (s *Store) RecordAttempts(ctx context.Context, recs []AttemptRecord, relayedEvents []string) error {
	if len(recs) == 0 && len(relayedEvents) == 0 {
		return nil
	}
	// Lock rows in a stable order so concurrent recorders cannot deadlock.
	recs = slices.Clone(recs)
	sort.Slice(recs, func(i, j int) bool { return recs[i].DeliveryID < recs[j].DeliveryID })
	a := newAttemptArrays(recs)
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := relaxCommit(ctx, tx); err != nil {
		return err
	}
	var ops []outbox.Operational
	if len(recs) > 0 {
		// Update (and so lock) the deliveries first; the attempt log gets
		// rows only for those still there.
		// The deliveries that failed for good come back: each whose retries
		// ran out is reported as delivery.exhausted in this transaction.
		var failed []failedDelivery
		if err := tx.SelectContext(ctx, &failed, `WITH u AS (
				SELECT * FROM unnest($1::uuid[], $2::text[], $3::int[], $4::int[], $5::int[], $6::text[], $7::text[], $8::text[])
					AS u(d, s, a, c, l, e, t, n)),
			upd AS (UPDATE dds.webhook_deliveries d SET
				status = CASE WHEN d.status = 'succeeded' THEN d.status ELSE u.s END,
				attempts = GREATEST(d.attempts, u.a), last_attempt_at = u.t::timestamptz,
				next_attempt_at = CASE WHEN d.status = 'succeeded' THEN NULL ELSE NULLIF(u.n, '')::timestamptz END,
				updated_at = now()
				FROM u WHERE d.id = u.d
				RETURNING d.id, d.status, d.tenant_id, d.webhook_id, d.event_id, d.event_type, d.attempts, d.last_attempt_at),
			ins AS (INSERT INTO dds.webhook_attempts (delivery_id, attempt, status_code, latency_ms, error, attempted_at, next_attempt_at)
				SELECT u.d, u.a, NULLIF(u.c, 0), u.l, NULLIF(u.e, ''), u.t::timestamptz, NULLIF(u.n, '')::timestamptz
				FROM u WHERE u.d IN (SELECT id FROM upd))
			SELECT id, tenant_id, webhook_id, event_id, event_type, attempts, last_attempt_at FROM upd WHERE status = 'failed'`,
			a.dIDs, a.statuses, a.attempts, a.codes, a.lats,
			a.errs, a.ats, a.nexts); err != nil {
			return err
		}
		ops = append(ops, exhaustedEvents(failed, recs)...)
	}
	if len(relayedEvents) > 0 {
		if err := outbox.MarkRelayed(ctx, tx, relayedEvents); err != nil {
			return err
		}
	}
	// The webhooks' counters last: every recording transaction of a webhook
	// updates its row, so concurrent batches wait for its lock; taken last,
	// it is held only until the commit.
	disabled, err := updateCounters(ctx, tx, recs)
	if err != nil {
		return err
	}
	ops = append(ops, disabledEvents(disabled, recs)...)
	if err := outbox.InsertOperational(ctx, tx, ops); err != nil {
		return err
	}
	return tx.Commit()
}

// attemptArrays are attempt records as the statements' parallel arrays.
type attemptArrays struct {
	dIDs, statuses, errs, nexts, ats []string
	attempts, codes, lats            []int64
}

func newAttemptArrays(recs []AttemptRecord) attemptArrays {
	var a attemptArrays
	for _, r := range recs {
		a.add(r)
	}
	return a
}

func (a *attemptArrays) add(r AttemptRecord) {
	a.dIDs = append(a.dIDs, r.DeliveryID)
	a.statuses = append(a.statuses, r.Status)
	a.attempts = append(a.attempts, int64(r.Attempt))
	a.codes = append(a.codes, int64(r.Result.StatusCode))
	a.lats = append(a.lats, r.Result.Latency.Milliseconds())
	a.errs = append(a.errs, truncate(r.Result.Err, 500))
	a.ats = append(a.ats, r.At.UTC().Format(time.RFC3339Nano))
	next := ""
	if r.Next != nil {
		next = r.Next.UTC().Format(time.RFC3339Nano)
	}
	a.nexts = append(a.nexts, next)
}

// updateCounters adds recs to their webhooks' counters (lastTriggered,
// successRate, the failure run) in tx, disabling a webhook on a 410 or
// when its failure run passes DisableAfter, and returns the webhooks it
// updated. Callers run it last in their transaction (see RecordAttempts).
func updateCounters(ctx context.Context, tx *sqlx.Tx, recs []AttemptRecord) ([]disabledHook, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	type agg struct {
		n, ok    int64
		gone     bool
		last     time.Time
		lastOK   time.Time
		failures []time.Time
	}
	per := map[string]*agg{}
	for _, r := range recs {
		a := per[r.WebhookID]
		if a == nil {
			a = &agg{}
			per[r.WebhookID] = a
		}
		a.n++
		if r.Result.OK() {
			a.ok++
			if r.At.After(a.lastOK) {
				a.lastOK = r.At
			}
		} else {
			a.failures = append(a.failures, r.At)
		}
		a.gone = a.gone || r.Result.Gone()
		if r.At.After(a.last) {
			a.last = r.At
		}
	}
	var wIDs, wLast, wFail []string
	var wN, wOK []int64
	var wGone []bool
	for id := range per {
		wIDs = append(wIDs, id)
	}
	slices.Sort(wIDs)
	for _, id := range wIDs {
		a := per[id]
		wN = append(wN, a.n)
		wOK = append(wOK, a.ok)
		wLast = append(wLast, a.last.UTC().Format(time.RFC3339Nano))
		wGone = append(wGone, a.gone)
		// The first failure after the last success of this group starts
		// (or continues) the failure run.
		var first time.Time
		for _, f := range a.failures {
			if f.After(a.lastOK) && (first.IsZero() || f.Before(first)) {
				first = f
			}
		}
		ff := ""
		if !first.IsZero() {
			ff = first.UTC().Format(time.RFC3339Nano)
		}
		wFail = append(wFail, ff)
	}
	// fs is the webhook's failure run after this group.
	const fs = `(CASE WHEN u.ff = '' THEN (CASE WHEN u.ok > 0 THEN NULL ELSE w.failing_since END)
		WHEN u.ok > 0 THEN u.ff::timestamptz ELSE COALESCE(w.failing_since, u.ff::timestamptz) END)`
	const failing = `COALESCE(` + fs + ` < now() - $7::interval, false)`
	var disabled []disabledHook
	err := tx.SelectContext(ctx, &disabled, `UPDATE dds.webhooks w SET attempt_count = attempt_count + u.n,
			success_count = success_count + u.ok,
			last_triggered = GREATEST(COALESCE(w.last_triggered, '-infinity'), u.t::timestamptz),
			failing_since = `+fs+`,
			is_active = w.is_active AND NOT u.gone AND NOT `+failing+`,
			disabled_reason = CASE WHEN NOT w.is_active THEN w.disabled_reason
				WHEN u.gone THEN 'gone' WHEN `+failing+` THEN 'failing' END,
			disabled_at = CASE WHEN NOT w.is_active THEN w.disabled_at WHEN u.gone OR `+failing+` THEN now() END
		FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::bool[]) AS u(id, n, ok, t, ff, gone)
		WHERE w.id = u.id
		RETURNING w.id, w.tenant_id, w.target_url, w.disabled_reason, w.disabled_at,
			NOT w.is_active AND w.disabled_at = now() AND w.disabled_reason IN ('gone', 'failing') AS newly`,
		wIDs, wN, wOK, wLast, wFail,
		wGone, (time.Duration(DisableAfter.Seconds()) * time.Second).String())
	return disabled, err
}

// AwaitingHandOver returns up to limit deliveries left retrying by a
// failed first attempt (or a manual replay) whose retry workflow is not
// started yet, oldest due first.
func (s *Store) AwaitingHandOver(ctx context.Context, limit int) ([]HandOverRef, error) {
	var out []HandOverRef
	err := s.db.SelectContext(ctx, &out, `SELECT id, webhook_id, event_id, tenant_id, event_type FROM dds.webhook_deliveries
		WHERE status = 'retrying' AND workflow_started_at IS NULL ORDER BY next_attempt_at LIMIT $1`, limit)
	return out, err
}

// HandOverRef names a delivery to give to its retry workflow.
type HandOverRef struct {
	ID        string `db:"id"`
	WebhookID string `db:"webhook_id"`
	EventID   string `db:"event_id"`
	TenantID  string `db:"tenant_id"`
	EventType string `db:"event_type"`
}

// MarkHandedOver records that the deliveries' retry workflows started.
func (s *Store) MarkHandedOver(ctx context.Context, deliveryIDs []string) error {
	if len(deliveryIDs) == 0 {
		return nil
	}
	ids := slices.Clone(deliveryIDs)
	slices.Sort(ids)
	_, err := s.db.ExecContext(ctx, `UPDATE dds.webhook_deliveries SET workflow_started_at = now() WHERE id = ANY($1::uuid[])`, ids)
	return err
}

// relaxCommit turns off the commit flush for the relay's bookkeeping
// transactions. This is safe for "never lost": the event row was committed
// durably by the entity write, and Postgres writes WAL in order, so a crash
// can only drop a suffix of these transactions; the event is then re-relayed
// and, at worst, a delivery is sent again with the same webhook-id. It
// saves an fsync per flush on the hot path.
func relaxCommit(ctx context.Context, tx *sqlx.Tx) error {
	_, err := tx.ExecContext(ctx, `SET LOCAL synchronous_commit = off`)
	return err
}

// SetStatus sets a delivery's status (cancelled when its webhook went away).
func (s *Store) SetStatus(ctx context.Context, deliveryID, status string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE dds.webhook_deliveries SET status = $2, next_attempt_at = NULL, updated_at = now()
		WHERE id = $1 AND status <> 'succeeded'`, deliveryID, status)
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func validUUID(s string) bool { return uuidRE.MatchString(s) }

// NewDelivery is a delivery row to create.
type NewDelivery struct {
	// ID is the row's id when RecordFirstAttempts creates it (its attempt
	// record names it); InsertDeliveries lets the database choose.
	ID                                                  string
	WebhookID, TenantID, EventID, EventType, EntityName string
	Body                                                []byte
	// Queued: the webhook has a rate limit, so the row starts queued for
	// the pacer instead of pending for the relay's first attempt.
	Queued bool
}

// DeliveryRef is a delivery row's identity and state after InsertDeliveries.
type DeliveryRef struct {
	ID        string `db:"id"`
	WebhookID string `db:"webhook_id"`
	EventID   string `db:"event_id"`
	Status    string `db:"status"`
	Attempts  int    `db:"attempts"`
	Body      []byte `db:"body"` // as stored: a re-relayed delivery sends the original bytes
}

// InsertDeliveries creates delivery rows, idempotent on (webhook, event):
// a row that exists already is returned with its current state, so a
// re-relayed event never resets or duplicates a delivery. Rows of a
// webhook deleted meanwhile are skipped. In the same
// transaction it marks relayedEvents (events without any delivery) relayed.
func (s *Store) InsertDeliveries(ctx context.Context, ds []NewDelivery, relayedEvents []string) ([]DeliveryRef, error) {
	ds = slices.Clone(ds)
	sort.Slice(ds, func(i, j int) bool {
		if ds[i].WebhookID != ds[j].WebhookID {
			return ds[i].WebhookID < ds[j].WebhookID
		}
		return ds[i].EventID < ds[j].EventID
	})
	var w, tn, ev, et, en, st []string
	var bodies [][]byte
	for _, d := range ds {
		if d.Queued {
			st = append(st, StatusQueued)
		} else {
			st = append(st, StatusPending)
		}
		w = append(w, d.WebhookID)
		tn = append(tn, d.TenantID)
		ev = append(ev, d.EventID)
		et = append(et, d.EventType)
		en = append(en, d.EntityName)
		bodies = append(bodies, d.Body)
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if err := relaxCommit(ctx, tx); err != nil {
		return nil, err
	}
	var out []DeliveryRef
	if len(ds) > 0 {
		// DO UPDATE (a no-op write) rather than DO NOTHING so that existing
		// rows are returned too.
		err = tx.SelectContext(ctx, &out, `INSERT INTO dds.webhook_deliveries (webhook_id, tenant_id, event_id, event_type, entity_name, body, status)
			SELECT u.* FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::bytea[], $7::text[]) AS u(w, t, e, et, en, b, s)
			WHERE EXISTS (SELECT 1 FROM dds.webhooks h WHERE h.id = u.w) -- deleted meanwhile: no delivery
			ON CONFLICT (webhook_id, event_id) DO UPDATE SET webhook_id = EXCLUDED.webhook_id
			RETURNING id, webhook_id, event_id, status, attempts, body`,
			w, tn, ev, et, en, bodies, st)
		if err != nil {
			return nil, err
		}
	}
	if len(relayedEvents) > 0 {
		if err := outbox.MarkRelayed(ctx, tx, relayedEvents); err != nil {
			return nil, err
		}
	}
	return out, tx.Commit()
}
