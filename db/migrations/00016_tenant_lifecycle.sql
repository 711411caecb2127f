-- Tenant lifecycle: a tenant being deleted is marked (deleted_at) in the
-- transaction that accepts the delete, which also revokes its keys; the
-- delete job removes everything else and finally the tenant row.
-- Operations on whole tenants (delete, export, import) are recorded in
-- dds.tenant_jobs, which has no foreign key to dds.tenants: a delete's row
-- outlives its tenant and an import's precedes it. Archives (exports, and
-- uploads to import) are objects in file storage recorded in
-- dds.tenant_archives.

-- +goose Up
ALTER TABLE dds.tenants ADD COLUMN deleted_at timestamptz;

CREATE TABLE dds.tenant_jobs (
    id          uuid PRIMARY KEY,
    tenant_id   uuid,                       -- NULL for an import until its tenant exists
    type        text NOT NULL CHECK (type IN ('delete', 'export', 'import')),
    status      text NOT NULL DEFAULT 'queued'
                CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    step        text,                       -- the step running or last done
    processed   bigint NOT NULL DEFAULT 0,
    total       bigint,
    spec        jsonb NOT NULL DEFAULT '{}',
    result      jsonb,
    error       jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    started_at  timestamptz,
    finished_at timestamptz
);
CREATE INDEX tenant_jobs_tenant ON dds.tenant_jobs (tenant_id, created_at DESC);
CREATE INDEX tenant_jobs_created ON dds.tenant_jobs (created_at DESC, id DESC);
-- At most one delete per tenant.
CREATE UNIQUE INDEX tenant_jobs_one_delete ON dds.tenant_jobs (tenant_id) WHERE type = 'delete';

CREATE TABLE dds.tenant_archives (
    id          uuid PRIMARY KEY,
    tenant_id   uuid,                       -- the exported tenant; NULL for an upload
    source      text NOT NULL CHECK (source IN ('export', 'upload')),
    storage_key text NOT NULL UNIQUE,
    size_bytes  bigint,
    sha256      text,
    status      text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'ready')),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tenant_archives_tenant ON dds.tenant_archives (tenant_id);

-- +goose Down
DROP TABLE dds.tenant_archives;
DROP TABLE dds.tenant_jobs;
ALTER TABLE dds.tenants DROP COLUMN deleted_at;
