-- Webhooks: subscriptions, one delivery per (webhook, event) holding the
-- exact body bytes sent on every attempt, and the attempt log.

-- +goose Up
CREATE TABLE dds.webhooks (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id      uuid NOT NULL REFERENCES dds.tenants(id) ON DELETE CASCADE,
    schema_name    text NOT NULL,
    target_url     text NOT NULL,
    event_types    text[] NOT NULL,
    entity_names   text[],                       -- NULL: every entity
    signing_secret text NOT NULL,                -- whsec_<base64>; returned only by create
    is_active      boolean NOT NULL DEFAULT true,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    last_triggered timestamptz,                  -- time of the latest attempt
    attempt_count  bigint NOT NULL DEFAULT 0,    -- successRate = success_count / attempt_count
    success_count  bigint NOT NULL DEFAULT 0
);
CREATE INDEX webhooks_tenant_active ON dds.webhooks (tenant_id) WHERE is_active;

CREATE TABLE dds.webhook_deliveries (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    webhook_id      uuid NOT NULL REFERENCES dds.webhooks(id) ON DELETE CASCADE,
    tenant_id       uuid NOT NULL,
    event_id        uuid NOT NULL,
    event_type      text NOT NULL,
    entity_name     text NOT NULL,
    body            bytea NOT NULL,             -- the exact bytes POSTed on every attempt
    status          text NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'succeeded', 'retrying', 'failed', 'cancelled')),
    attempts        int NOT NULL DEFAULT 0,
    last_attempt_at timestamptz,
    next_attempt_at timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_webhook ON dds.webhook_deliveries (webhook_id, created_at DESC);

CREATE TABLE dds.webhook_attempts (
    id              bigserial PRIMARY KEY,
    delivery_id     uuid NOT NULL REFERENCES dds.webhook_deliveries(id) ON DELETE CASCADE,
    attempt         int NOT NULL,                -- 1 = first attempt, 2..6 = retries
    status_code     int,                         -- NULL when no HTTP response (time-out, refused)
    latency_ms      int NOT NULL,
    error           text,
    attempted_at    timestamptz NOT NULL DEFAULT now(),
    next_attempt_at timestamptz                  -- NULL: no further attempt scheduled
);
CREATE INDEX webhook_attempts_delivery ON dds.webhook_attempts (delivery_id, attempt);

-- +goose Down
DROP TABLE dds.webhook_attempts;
DROP TABLE dds.webhook_deliveries;
DROP TABLE dds.webhooks;
