-- Jobs: work larger than one request (imports, update/delete by filter).
-- One row per job; the job's Temporal workflow (ID job/<id>) moves it from
-- queued to running to a terminal status. applied_at is set in the very
-- transaction that applies the job's writes, which makes applying
-- idempotent: a retried apply that finds it set does nothing.
-- Imports stage their rows in UNLOGGED tables of schema dds_jobs (one per
-- job, dropped when the job ends).

-- +goose Up
CREATE TABLE dds.jobs (
    id               uuid PRIMARY KEY,
    tenant_id        uuid NOT NULL REFERENCES dds.tenants(id) ON DELETE CASCADE,
    schema_id        uuid NOT NULL,
    type             text NOT NULL CHECK (type IN ('import', 'update', 'delete')),
    entity           text NOT NULL,
    spec             jsonb NOT NULL,
    status           text NOT NULL DEFAULT 'queued'
                     CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    processed        bigint NOT NULL DEFAULT 0,
    total            bigint,
    result           jsonb,
    error            jsonb,
    cancel_requested boolean NOT NULL DEFAULT false,
    applied_at       timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz
);
CREATE INDEX jobs_tenant_created ON dds.jobs (tenant_id, created_at DESC, id DESC);
CREATE INDEX jobs_tenant_status ON dds.jobs (tenant_id, status, created_at DESC);
CREATE SCHEMA IF NOT EXISTS dds_jobs;

-- +goose Down
DROP SCHEMA IF EXISTS dds_jobs CASCADE;
DROP TABLE dds.jobs;
