-- Per-webhook rate limit (docs/webhooks.md, "Rate limit"). A delivery of a
-- rate-limited webhook is committed 'queued' instead of 'pending': the
-- relay marks its event relayed at once and a pacer (in every worker)
-- claims queued rows together with the webhook's pacing slots, in one
-- transaction on the webhook's dds.webhook_pacing row, so the limit holds
-- across every relay process and for Temporal retries, which reserve their
-- slot on the same row. claimed_until is the pacer's expiring claim on a
-- queued row (a dead worker's claims lapse and another pacer takes them).

-- +goose Up
ALTER TABLE dds.webhooks ADD COLUMN rate_limit int CHECK (rate_limit BETWEEN 1 AND 1000);
ALTER TABLE dds.webhook_deliveries DROP CONSTRAINT webhook_deliveries_status_check;
ALTER TABLE dds.webhook_deliveries ADD CONSTRAINT webhook_deliveries_status_check
    CHECK (status IN ('pending', 'queued', 'succeeded', 'retrying', 'failed', 'cancelled'));
ALTER TABLE dds.webhook_deliveries ADD COLUMN claimed_until timestamptz;
CREATE INDEX webhook_deliveries_queued ON dds.webhook_deliveries (webhook_id, created_at, id)
    WHERE status = 'queued';
-- One row per webhook that ever had a rate limit: next_slot is the earliest
-- time the next delivery of that webhook may start.
CREATE TABLE dds.webhook_pacing (
    webhook_id uuid PRIMARY KEY REFERENCES dds.webhooks(id) ON DELETE CASCADE,
    next_slot  timestamptz NOT NULL DEFAULT '-infinity'
);

-- +goose Down
DROP TABLE dds.webhook_pacing;
DROP INDEX dds.webhook_deliveries_queued;
ALTER TABLE dds.webhook_deliveries DROP COLUMN claimed_until;
UPDATE dds.webhook_deliveries SET status = 'pending' WHERE status = 'queued';
ALTER TABLE dds.webhook_deliveries DROP CONSTRAINT webhook_deliveries_status_check;
ALTER TABLE dds.webhook_deliveries ADD CONSTRAINT webhook_deliveries_status_check
    CHECK (status IN ('pending', 'succeeded', 'retrying', 'failed', 'cancelled'));
ALTER TABLE dds.webhooks DROP COLUMN rate_limit;
