-- Indexes for pruning: relayed events and finished deliveries past their
-- retention are deleted in batches by the worker (relay.Pruner).

-- +goose Up
CREATE INDEX events_relayed ON dds.events (relayed_at) WHERE relayed_at IS NOT NULL;
CREATE INDEX webhook_deliveries_finished ON dds.webhook_deliveries (updated_at)
    WHERE status IN ('succeeded', 'failed', 'cancelled');

-- +goose Down
DROP INDEX dds.webhook_deliveries_finished;
DROP INDEX dds.events_relayed;
