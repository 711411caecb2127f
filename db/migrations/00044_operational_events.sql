-- Operational events (docs/webhooks.md, "Operational events"): the outbox
-- also carries webhook.disabled and delivery.exhausted, tenant-level events
-- about the tenant's webhooks (no schema, no entity; record is the data).

-- +goose Up
ALTER TABLE dds.events DROP CONSTRAINT events_type_check;
ALTER TABLE dds.events ADD CONSTRAINT events_type_check CHECK (type IN (
    'entity.created', 'entity.updated', 'entity.deleted',
    'relationship.created', 'relationship.updated', 'relationship.deleted',
    'webhook.disabled', 'delivery.exhausted'));

-- +goose Down
DELETE FROM dds.events WHERE type IN ('webhook.disabled', 'delivery.exhausted');
ALTER TABLE dds.events DROP CONSTRAINT events_type_check;
ALTER TABLE dds.events ADD CONSTRAINT events_type_check CHECK (type IN (
    'entity.created', 'entity.updated', 'entity.deleted',
    'relationship.created', 'relationship.updated', 'relationship.deleted'));
