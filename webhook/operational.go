package webhook

// The operational events this package reports (docs/webhooks.md,
// "Operational events"): webhook.disabled when a webhook is disabled
// automatically (410 Gone, or failing for DisableAfter) and
// delivery.exhausted when a delivery's retries ran out. RecordAttempts
// writes them to the outbox in the transaction that records the attempt,
// so each is written exactly once, when its cause commits.

import (
	"encoding/json"
	"time"

	"github.com/dds-project/dds/outbox"
)

// failedDelivery is a delivery RecordAttempts left failed.
type failedDelivery struct {
	ID            string    `db:"id"`
	TenantID      string    `db:"tenant_id"`
	WebhookID     string    `db:"webhook_id"`
	EventID       string    `db:"event_id"`
	EventType     string    `db:"event_type"`
	Attempts      int       `db:"attempts"`
	LastAttemptAt time.Time `db:"last_attempt_at"`
}

// disabledHook is a webhook row RecordAttempts updated; Newly when this
// transaction disabled it automatically.
type disabledHook struct {
	ID        string     `db:"id"`
	TenantID  string     `db:"tenant_id"`
	TargetURL string     `db:"target_url"`
	Reason    *string    `db:"disabled_reason"`
	At        *time.Time `db:"disabled_at"`
	Newly     bool       `db:"newly"`
}

// ExhaustedData is the data of a delivery.exhausted event.
type ExhaustedData struct {
	WebhookID      string    `json:"webhookId"`
	DeliveryID     string    `json:"deliveryId"`
	EventID        string    `json:"eventId"`
	EventType      string    `json:"eventType"`
	Attempts       int       `json:"attempts"`
	LastStatusCode *int      `json:"lastStatusCode"` // null: no HTTP answer (time-out, refused)
	LastError      *string   `json:"lastError"`
	LastAttemptAt  time.Time `json:"lastAttemptAt"`
}

// DisabledData is the data of a webhook.disabled event.
type DisabledData struct {
	WebhookID  string    `json:"webhookId"`
	TargetURL  string    `json:"targetUrl"`
	Reason     string    `json:"reason"` // gone | failing
	DisabledAt time.Time `json:"disabledAt"`
	LastError  LastError `json:"lastError"`
}

// LastError is the failed attempt that disabled a webhook.
type LastError struct {
	DeliveryID  string    `json:"deliveryId"`
	StatusCode  *int      `json:"statusCode"`
	Error       *string   `json:"error"`
	AttemptedAt time.Time `json:"attemptedAt"`
}

func statusAndError(res Result) (*int, *string) {
	var code *int
	var msg *string
	if res.StatusCode != 0 {
		c := res.StatusCode
		code = &c
	}
	if res.Err != "" {
		e := truncate(res.Err, 500)
		msg = &e
	}
	return code, msg
}

// exhaustedEvents reports the failed deliveries whose retries ran out:
// not those a 410 failed (the webhook.disabled event says why), and not
// deliveries of operational events (a webhook failing to receive its
// delivery.exhausted must not report that again, without end).
func exhaustedEvents(failed []failedDelivery, recs []AttemptRecord) []outbox.Operational {
	byID := map[string]AttemptRecord{}
	for _, r := range recs {
		byID[r.DeliveryID] = r
	}
	var out []outbox.Operational
	for _, f := range failed {
		r, ok := byID[f.ID]
		if !ok || r.Status != StatusFailed || r.Result.Gone() || outbox.IsOperational(f.EventType) {
			continue
		}
		code, msg := statusAndError(r.Result)
		data, _ := json.Marshal(ExhaustedData{WebhookID: f.WebhookID, DeliveryID: f.ID, EventID: f.EventID, EventType: f.EventType,
			Attempts: f.Attempts, LastStatusCode: code, LastError: msg, LastAttemptAt: f.LastAttemptAt.UTC()})
		out = append(out, outbox.Operational{TenantID: f.TenantID, Type: outbox.DeliveryExhausted, SubjectID: f.ID, Data: data})
	}
	return out
}

// disabledEvents reports the webhooks this transaction disabled, each with
// its latest failed attempt among recs.
func disabledEvents(hooks []disabledHook, recs []AttemptRecord) []outbox.Operational {
	var out []outbox.Operational
	for _, h := range hooks {
		if !h.Newly || h.Reason == nil || h.At == nil {
			continue
		}
		var last *AttemptRecord
		for i := range recs {
			r := &recs[i]
			if r.WebhookID == h.ID && !r.Result.OK() && (last == nil || r.At.After(last.At)) {
				last = r
			}
		}
		d := DisabledData{WebhookID: h.ID, TargetURL: h.TargetURL, Reason: *h.Reason, DisabledAt: h.At.UTC()}
		if last != nil {
			code, msg := statusAndError(last.Result)
			d.LastError = LastError{DeliveryID: last.DeliveryID, StatusCode: code, Error: msg, AttemptedAt: last.At.UTC()}
		}
		data, _ := json.Marshal(d)
		out = append(out, outbox.Operational{TenantID: h.TenantID, Type: outbox.WebhookDisabled, SubjectID: h.ID, Data: data})
	}
	return out
}
