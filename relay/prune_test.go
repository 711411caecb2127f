package relay_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/dds-project/dds/relay"
	"github.com/dds-project/dds/webhook/webhooktest"
)

func TestPruneKeepsWhatIsStillNeeded(t *testing.T) {
	d := webhooktest.DB(t)
	tn := webhooktest.Tenant(t, d, "prune")
	event := func(relayedAgo *time.Duration) string {
		var id string
		err := d.Get(&id, `INSERT INTO dds.events (tenant_id, schema_id, schema_name, type, entity_name, entity_id, record, claimed_until, relayed_at)
			VALUES ($1, gen_random_uuid(), 's', 'entity.created', 'P', gen_random_uuid(), '{}', now() + interval '1 hour',
			        CASE WHEN $2::bigint IS NULL THEN NULL ELSE now() - make_interval(secs => $2::bigint) END) RETURNING id`,
			tn, secs(relayedAgo))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	old, recent := 10*24*time.Hour, time.Hour
	oldRelayed, recentRelayed, pending := event(&old), event(&recent), event(nil)

	var hook string
	if err := d.Get(&hook, `INSERT INTO dds.webhooks (tenant_id, schema_name, target_url, event_types, signing_secret)
		VALUES ($1, '', 'https://example.test/h', '{entity.created}', 'whsec_x') RETURNING id`, tn); err != nil {
		t.Fatal(err)
	}
	delivery := func(status string, ago time.Duration) string {
		var id string
		if err := d.Get(&id, `INSERT INTO dds.webhook_deliveries (webhook_id, tenant_id, event_id, event_type, entity_name, body, status, updated_at)
			VALUES ($1, $2, gen_random_uuid(), 'entity.created', 'P', '{}', $3, now() - make_interval(secs => $4::bigint)) RETURNING id`,
			hook, tn, status, secs(&ago)); err != nil {
			t.Fatal(err)
		}
		return id
	}
	month := 40 * 24 * time.Hour
	oldOK, oldRetrying, newOK := delivery("succeeded", month), delivery("retrying", month), delivery("succeeded", time.Hour)
	if _, err := d.Exec(`INSERT INTO dds.webhook_attempts (delivery_id, attempt, status_code, latency_ms) VALUES ($1, 1, 200, 5)`, oldOK); err != nil {
		t.Fatal(err)
	}

	p := &relay.Pruner{DB: d, Events: 7 * 24 * time.Hour, Deliveries: 30 * 24 * time.Hour, Log: slog.Default()}
	if _, _, err := p.Prune(t.Context()); err != nil {
		t.Fatal(err)
	}
	exists := func(table, id string) bool {
		var ok bool
		if err := d.Get(&ok, `SELECT EXISTS (SELECT 1 FROM `+table+` WHERE id = $1)`, id); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for _, c := range []struct {
		table, id, what string
		want            bool
	}{
		{"dds.events", oldRelayed, "an event relayed 10 days ago", false},
		{"dds.events", recentRelayed, "an event relayed an hour ago", true},
		{"dds.events", pending, "an event not yet relayed", true},
		{"dds.webhook_deliveries", oldOK, "a delivery finished 40 days ago", false},
		{"dds.webhook_deliveries", oldRetrying, "a delivery still retrying", true},
		{"dds.webhook_deliveries", newOK, "a delivery finished an hour ago", true},
	} {
		if got := exists(c.table, c.id); got != c.want {
			t.Errorf("%s: exists = %v, want %v", c.what, got, c.want)
		}
	}
	var attempts int
	if err := d.Get(&attempts, `SELECT count(*) FROM dds.webhook_attempts WHERE delivery_id = $1`, oldOK); err != nil {
		t.Fatal(err)
	}
	if attempts != 0 {
		t.Error("a pruned delivery's attempts must go with it")
	}
}

func secs(d *time.Duration) *int64 {
	if d == nil {
		return nil
	}
	s := int64(d.Seconds())
	return &s
}
