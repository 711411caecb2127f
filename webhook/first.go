package webhook

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/dds-project/dds/outbox"
)

// The relay's first attempts (docs/webhooks.md, "How delivery works"): a
// delivery row is created together with the record of its first attempt,
// in one transaction after the POST, instead of being committed `pending`
// before it and updated after. Nothing can be lost by that: until the
// transaction commits, the event is not relayed, so a relay that dies
// before it leaves the event to be claimed again, exactly as a `pending`
// row did; what a crash can repeat is the same (the POSTs whose results
// were not recorded yet). It saves, per batch, the transaction on the
// path between claim and POST, and per delivery the update of a row
// that was just inserted with its body.

// ActiveWithDeliveries returns the active webhooks of the given tenants
// and, in the same statement, the status of every delivery row these
// webhooks already have for eventIDs, keyed by DeliveryKey (a re-relayed
// event: an earlier pass recorded them, or another relay is recording
// them now).
func (s *Store) ActiveWithDeliveries(ctx context.Context, tenantIDs, eventIDs []string) ([]Webhook, map[string]string, error) {
	var rows []struct {
		Webhook
		Existing pq.StringArray `db:"existing"`
	}
	err := s.db.SelectContext(ctx, &rows, `SELECT `+webhookCols+`,
			ARRAY(SELECT d.event_id::text || ' ' || d.status FROM dds.webhook_deliveries d
				WHERE d.webhook_id = w.id AND d.event_id = ANY($2::uuid[])) AS existing
		FROM dds.webhooks w WHERE is_active AND tenant_id = ANY($1::uuid[])`, tenantIDs, eventIDs)
	if err != nil {
		return nil, nil, err
	}
	hooks := make([]Webhook, len(rows))
	var existing map[string]string
	for i, r := range rows {
		hooks[i] = r.Webhook
		for _, e := range r.Existing {
			ev, status, _ := strings.Cut(e, " ")
			if existing == nil {
				existing = map[string]string{}
			}
			existing[DeliveryKey(r.ID, ev)] = status
		}
	}
	return hooks, existing, nil
}

// DeliveryKey identifies a delivery by its webhook and event.
func DeliveryKey(webhookID, eventID string) string { return webhookID + "/" + eventID }

// RecordFirstAttempts creates delivery rows with their first attempts, in
// one transaction: each of ds whose ID an attempt record of recs names
// gets that attempt's outcome (and its attempt log row); a Queued one
// starts queued for the pacer. In the same transaction it updates the
// webhooks' counters as RecordAttempts does (a 410 disables the webhook).
// The relay marks the events relayed when it finishes their held claim
// (outbox.Held.Finish), not here.
//
// A row that exists already (another relay took the event over while
// this one worked on it, or a row an earlier version left `pending`)
// takes the attempt as RecordAttempts would: a succeeded delivery stays
// succeeded; a queued one is left alone. Rows of a webhook deleted
// meanwhile are skipped, never an error.
func (s *Store) RecordFirstAttempts(ctx context.Context, ds []NewDelivery, recs []AttemptRecord) error {
	if len(ds) == 0 {
		return nil
	}
	// Rows are inserted (and so locked) in one order: concurrent
	// recorders of the same keys cannot deadlock.
	ds = slices.Clone(ds)
	sort.Slice(ds, func(i, j int) bool {
		if ds[i].WebhookID != ds[j].WebhookID {
			return ds[i].WebhookID < ds[j].WebhookID
		}
		return ds[i].EventID < ds[j].EventID
	})
	byID := make(map[string]AttemptRecord, len(recs))
	for _, r := range recs {
		byID[r.DeliveryID] = r
	}
	var w, tn, ev, et, en []string
	var bodies [][]byte
	var a attemptArrays
	for _, d := range ds {
		r, ok := byID[d.ID]
		if !ok {
			r = AttemptRecord{DeliveryID: d.ID, WebhookID: d.WebhookID, Status: StatusQueued}
		}
		a.add(r)
		if !ok {
			a.ats[len(a.ats)-1] = "" // no attempt
		}
		w = append(w, d.WebhookID)
		tn = append(tn, d.TenantID)
		ev = append(ev, d.EventID)
		et = append(et, d.EventType)
		en = append(en, d.EntityName)
		bodies = append(bodies, d.Body)
	}
	allOK := true
	for _, r := range recs {
		allOK = allOK && r.Result.OK()
	}
	if allOK {
		return s.recordFirstSucceeded(ctx, recs, a, w, tn, ev, et, en, bodies)
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := relaxCommit(ctx, tx); err != nil {
		return err
	}
	var rows []struct {
		ID        string `db:"id"`
		Requested string `db:"requested"`
	}
	// The attempt log gets rows only for the deliveries inserted or
	// updated (not for a deleted webhook's), under the row's real id.
	if err := tx.SelectContext(ctx, &rows, `WITH `+firstAttemptsCTE+`
		SELECT ins.id, u.id AS requested FROM ins JOIN u ON ins.webhook_id = u.w AND ins.event_id = u.e WHERE ins.id <> u.id`,
		a.dIDs, w, tn, ev, et, en,
		bodies, a.statuses, a.attempts, a.codes, a.lats,
		a.errs, a.ats, a.nexts); err != nil {
		return err
	}
	recs = realIDs(recs, rows)
	// The webhooks' counters last (see RecordAttempts).
	disabled, err := updateCounters(ctx, tx, recs)
	if err != nil {
		return err
	}
	if err := outbox.InsertOperational(ctx, tx, disabledEvents(disabled, recs)); err != nil {
		return err
	}
	return tx.Commit()
}

// firstAttemptsCTE creates the delivery rows of RecordFirstAttempts'
// arguments $1–$14 with their attempts (ins: the rows as stored).
const firstAttemptsCTE = `u AS (
				SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::text[], $7::bytea[],
					$8::text[], $9::int[], $10::int[], $11::int[], $12::text[], $13::text[], $14::text[])
					AS u(id, w, t, e, et, en, b, s, a, c, l, err, at, n)),
			ins AS (INSERT INTO dds.webhook_deliveries AS d (id, webhook_id, tenant_id, event_id, event_type, entity_name, body,
					status, attempts, last_attempt_at, next_attempt_at, first_status_code, first_latency_ms, first_attempted_at)
				SELECT u.id, u.w, u.t, u.e, u.et, u.en, u.b, u.s, u.a, NULLIF(u.at, '')::timestamptz, NULLIF(u.n, '')::timestamptz,
					-- a first attempt that succeeded is kept on the row, not in the attempt log
					CASE WHEN u.s = 'succeeded' AND u.a = 1 THEN NULLIF(u.c, 0) END,
					CASE WHEN u.s = 'succeeded' AND u.a = 1 THEN u.l END,
					CASE WHEN u.s = 'succeeded' AND u.a = 1 THEN NULLIF(u.at, '')::timestamptz END
				FROM u WHERE EXISTS (SELECT 1 FROM dds.webhooks h WHERE h.id = u.w) -- deleted meanwhile: no delivery
				ON CONFLICT (webhook_id, event_id) DO UPDATE SET
					status = CASE WHEN EXCLUDED.status = 'queued' OR d.status IN ('succeeded', 'queued') THEN d.status ELSE EXCLUDED.status END,
					attempts = CASE WHEN EXCLUDED.status = 'queued' OR d.status = 'queued' THEN d.attempts ELSE GREATEST(d.attempts, EXCLUDED.attempts) END,
					last_attempt_at = CASE WHEN EXCLUDED.status = 'queued' OR d.status = 'queued' THEN d.last_attempt_at ELSE EXCLUDED.last_attempt_at END,
					next_attempt_at = CASE WHEN EXCLUDED.status = 'queued' OR d.status = 'queued' THEN d.next_attempt_at
						WHEN d.status = 'succeeded' THEN NULL ELSE EXCLUDED.next_attempt_at END,
					-- a row left pending by an earlier version: what was sent is this body
					body = CASE WHEN d.status = 'pending' THEN EXCLUDED.body ELSE d.body END,
					updated_at = now()
				RETURNING d.id, d.webhook_id, d.event_id, d.status),
			-- the attempt log gets every attempt not kept on its row; a row
			-- that existed already (ON CONFLICT: its id is not the one
			-- requested) keeps its own first_* and logs the attempt
			att AS (INSERT INTO dds.webhook_attempts (delivery_id, attempt, status_code, latency_ms, error, attempted_at, next_attempt_at)
				SELECT ins.id, u.a, NULLIF(u.c, 0), u.l, NULLIF(u.err, ''), u.at::timestamptz, NULLIF(u.n, '')::timestamptz
				FROM u JOIN ins ON ins.webhook_id = u.w AND ins.event_id = u.e
				WHERE u.s <> 'queued' AND ins.status <> 'queued' AND NOT (ins.id = u.id AND u.s = 'succeeded' AND u.a = 1))`

// recordFirstSucceeded is RecordFirstAttempts when every attempt
// succeeded (the common case): nothing can disable a webhook, so no
// operational event can follow, and the whole recording is one statement
// in its own transaction — one round trip instead of six.
func (s *Store) recordFirstSucceeded(ctx context.Context, recs []AttemptRecord, a attemptArrays, w, tn, ev, et, en []string, bodies [][]byte) error {
	type agg struct {
		n    int64
		last time.Time
	}
	per := map[string]*agg{}
	for _, r := range recs {
		g := per[r.WebhookID]
		if g == nil {
			g = &agg{}
			per[r.WebhookID] = g
		}
		g.n++
		if r.At.After(g.last) {
			g.last = r.At
		}
	}
	var wIDs, wLast []string
	var wN []int64
	for id := range per {
		wIDs = append(wIDs, id)
	}
	slices.Sort(wIDs)
	for _, id := range wIDs {
		wN = append(wN, per[id].n)
		wLast = append(wLast, per[id].last.UTC().Format(time.RFC3339Nano))
	}
	var rows []struct {
		ID        *string `db:"id"`
		Requested *string `db:"requested"`
	}
	// set_config(..., true) lasts until the end of the statement's own
	// transaction, whose commit it relaxes as relaxCommit does. The
	// webhooks' counters are updated by the same statement, so their row
	// lock is held only until the commit that follows it at once.
	err := s.db.SelectContext(ctx, &rows, `WITH relax AS (SELECT set_config('synchronous_commit', 'off', true)),
			`+firstAttemptsCTE+`,
			cnt AS (UPDATE dds.webhooks w SET attempt_count = w.attempt_count + c.n, success_count = w.success_count + c.n,
					last_triggered = GREATEST(COALESCE(w.last_triggered, '-infinity'), c.t::timestamptz), failing_since = NULL
				FROM unnest($15::uuid[], $16::bigint[], $17::text[]) AS c(id, n, t) WHERE w.id = c.id)
		SELECT x.id, x.requested FROM relax LEFT JOIN LATERAL (
			SELECT ins.id, u.id AS requested FROM ins JOIN u ON ins.webhook_id = u.w AND ins.event_id = u.e WHERE ins.id <> u.id) x ON true`,
		a.dIDs, w, tn, ev, et, en,
		bodies, a.statuses, a.attempts, a.codes, a.lats,
		a.errs, a.ats, a.nexts,
		wIDs, wN, wLast)
	return err
}

// realIDs names, in recs, the rows that existed already (another relay's
// or an earlier pass's) by their own ids: their attempts are theirs.
func realIDs(recs []AttemptRecord, rows []struct {
	ID        string `db:"id"`
	Requested string `db:"requested"`
}) []AttemptRecord {
	if len(rows) == 0 {
		return recs
	}
	recs = slices.Clone(recs)
	real := map[string]string{}
	for _, r := range rows {
		real[r.Requested] = r.ID
	}
	for i := range recs {
		if id, ok := real[recs[i].DeliveryID]; ok {
			recs[i].DeliveryID = id
		}
	}
	return recs
}
