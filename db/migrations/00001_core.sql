-- Control plane: tenants, API keys, schemas and their versions, and the
-- event outbox written in the same transaction as every entity write.

-- +goose Up
CREATE EXTENSION IF NOT EXISTS vector;
CREATE SCHEMA IF NOT EXISTS dds;

CREATE TABLE dds.tenants (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE dds.api_keys (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id  uuid NOT NULL REFERENCES dds.tenants(id) ON DELETE CASCADE,
    name       text NOT NULL,
    key_hash   bytea NOT NULL UNIQUE,      -- sha256 of the whole key; the key itself is never stored
    key_prefix text NOT NULL,              -- "dds_live_ab12", for display only
    scopes     text[] NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_used  timestamptz,
    revoked_at timestamptz
);
CREATE INDEX api_keys_tenant ON dds.api_keys (tenant_id);

-- A schema is a named, versioned definition; its data lives in its own
-- Postgres schema (pg_schema). Exactly one schema per tenant is active.
CREATE TABLE dds.schemas (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id  uuid NOT NULL REFERENCES dds.tenants(id) ON DELETE CASCADE,
    name       text NOT NULL,
    version    int NOT NULL DEFAULT 1,
    definition jsonb NOT NULL,
    pg_schema  text NOT NULL UNIQUE,
    active     boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name)
);
CREATE UNIQUE INDEX schemas_one_active ON dds.schemas (tenant_id) WHERE active;

CREATE TABLE dds.schema_versions (
    schema_id  uuid NOT NULL REFERENCES dds.schemas(id) ON DELETE CASCADE,
    version    int NOT NULL,
    definition jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (schema_id, version)
);

-- Outbox. Rows are inserted by the same transaction as the entity write.
-- The worker's relay claims rows (claimed_until, an expiring claim rather
-- than a lock flag) and marks them relayed_at once handed to delivery.
CREATE TABLE dds.events (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    seq           bigserial NOT NULL,
    tenant_id     uuid NOT NULL,
    schema_id     uuid NOT NULL,
    schema_name   text NOT NULL,
    type          text NOT NULL CHECK (type IN ('entity.created', 'entity.updated', 'entity.deleted')),
    entity_name   text NOT NULL,
    entity_id     uuid NOT NULL,
    record        jsonb NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    claimed_until timestamptz,
    relayed_at    timestamptz
);
CREATE INDEX events_pending ON dds.events (seq) WHERE relayed_at IS NULL;
CREATE INDEX events_tenant_seq ON dds.events (tenant_id, seq);

-- Every committed event wakes listeners (the relay, subscription servers).
-- Payload: "<tenant_id>:<event_id>".
-- +goose StatementBegin
CREATE FUNCTION dds.notify_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('dds_events', NEW.tenant_id::text || ':' || NEW.id::text);
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER events_notify AFTER INSERT ON dds.events
    FOR EACH ROW EXECUTE FUNCTION dds.notify_event();

-- API-key revocations are broadcast (payload: key id) so every replica drops
-- its cache entries for that key and the access tokens it minted.
-- +goose StatementBegin
CREATE FUNCTION dds.notify_key_revoked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.revoked_at IS NOT NULL AND OLD.revoked_at IS NULL THEN
        PERFORM pg_notify('dds_keys', NEW.id::text);
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER api_keys_revoked AFTER UPDATE OF revoked_at ON dds.api_keys
    FOR EACH ROW EXECUTE FUNCTION dds.notify_key_revoked();

-- Schema activations and updates are broadcast (payload: tenant id) so every
-- replica reloads its cached active schema.
-- +goose StatementBegin
CREATE FUNCTION dds.notify_schema_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('dds_schemas', NEW.tenant_id::text);
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER schemas_changed AFTER INSERT OR UPDATE ON dds.schemas
    FOR EACH ROW EXECUTE FUNCTION dds.notify_schema_changed();

-- +goose Down
DROP SCHEMA dds CASCADE;
