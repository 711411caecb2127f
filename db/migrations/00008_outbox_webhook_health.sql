-- Relationship events in the outbox; retry workflows handed over from
-- Postgres (so an unreachable Temporal holds nothing up); webhooks that
-- disable themselves (410 Gone, or failing for five days) and say why.

-- +goose Up
ALTER TABLE dds.events DROP CONSTRAINT events_type_check;
ALTER TABLE dds.events ADD CONSTRAINT events_type_check CHECK (type IN (
    'entity.created', 'entity.updated', 'entity.deleted',
    'relationship.created', 'relationship.updated', 'relationship.deleted'));

-- NULL while a retrying delivery waits for its retry workflow to start.
-- Rows retrying before this migration had theirs started by the relay.
ALTER TABLE dds.webhook_deliveries ADD COLUMN workflow_started_at timestamptz;
UPDATE dds.webhook_deliveries SET workflow_started_at = updated_at WHERE status = 'retrying';
CREATE INDEX webhook_deliveries_retrying ON dds.webhook_deliveries (next_attempt_at)
    WHERE status = 'retrying';

ALTER TABLE dds.webhooks
    ADD COLUMN failing_since   timestamptz,  -- first failure of an unbroken run; NULL after a success
    ADD COLUMN disabled_reason text CHECK (disabled_reason IN ('gone', 'failing', 'user')),
    ADD COLUMN disabled_at     timestamptz;

-- +goose Down
ALTER TABLE dds.webhooks DROP COLUMN disabled_at, DROP COLUMN disabled_reason, DROP COLUMN failing_since;
DROP INDEX dds.webhook_deliveries_retrying;
ALTER TABLE dds.webhook_deliveries DROP COLUMN workflow_started_at;
DELETE FROM dds.events WHERE type LIKE 'relationship.%';
ALTER TABLE dds.events DROP CONSTRAINT events_type_check;
ALTER TABLE dds.events ADD CONSTRAINT events_type_check CHECK (type IN ('entity.created', 'entity.updated', 'entity.deleted'));
