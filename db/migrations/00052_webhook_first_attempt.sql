-- A delivery whose first attempt succeeded carries that attempt on its own
-- row (status code, latency, time) instead of a dds.webhook_attempts row:
-- it is the common case, and the attempt-log row (heap tuple and two index
-- entries) was about an eighth of Postgres' work per delivery of a backlog.
-- The delivery log (webhook.Store.Deliveries) shows it as attempt 1 exactly
-- as before. NULL: attempt 1, if made, is in dds.webhook_attempts.

-- +goose Up
ALTER TABLE dds.webhook_deliveries
    ADD COLUMN first_status_code int,
    ADD COLUMN first_latency_ms int,
    ADD COLUMN first_attempted_at timestamptz;

-- +goose Down
INSERT INTO dds.webhook_attempts (delivery_id, attempt, status_code, latency_ms, attempted_at)
    SELECT id, 1, first_status_code, first_latency_ms, first_attempted_at
    FROM dds.webhook_deliveries WHERE first_attempted_at IS NOT NULL;
ALTER TABLE dds.webhook_deliveries
    DROP COLUMN first_status_code,
    DROP COLUMN first_latency_ms,
    DROP COLUMN first_attempted_at;
