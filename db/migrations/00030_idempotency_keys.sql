-- Idempotency-Key: what a write guarded by a key answered, for 24 hours, so
-- that a retry with the same key and body gets the same answer and writes
-- nothing (package idempotency). committed is set in the write's own
-- transaction, so after a lost answer the row tells whether the write
-- committed.

-- +goose Up
CREATE TABLE dds.idempotency_keys (
    tenant_id    uuid        NOT NULL REFERENCES dds.tenants (id) ON DELETE CASCADE,
    key          text        NOT NULL,
    request_hash bytea       NOT NULL,  -- sha256 of method, path and body
    committed    boolean     NOT NULL DEFAULT false,
    lease_until  timestamptz,           -- while the first request runs
    status       integer,               -- its answer, once recorded
    content_type text,
    body         bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, key)
);
CREATE INDEX idempotency_keys_expires ON dds.idempotency_keys (expires_at);

-- +goose Down
DROP TABLE dds.idempotency_keys;
