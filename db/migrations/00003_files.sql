-- Files: metadata of presigned uploads. The bytes live in the storage driver
-- under storage_key; the upload workflow (ID = file id) moves a row from
-- pending to confirmed (after verifying the stored object) or to expired
-- (after deleting any orphan object). Deleted rows are kept as tombstones
-- (status 'deleted', deleted_at) until the delete workflow has removed the
-- object (purged_at).

-- +goose Up
CREATE TABLE dds.files (
    id                uuid PRIMARY KEY,
    tenant_id         uuid NOT NULL REFERENCES dds.tenants(id) ON DELETE CASCADE,
    file_name         text NOT NULL,
    mime_type         text NOT NULL,
    size_bytes        bigint NOT NULL CHECK (size_bytes >= 0 AND size_bytes <= 104857600),
    entity_name       text,
    entity_id         text,
    field_name        text,
    status            text NOT NULL DEFAULT 'pending'
                      CHECK (status IN ('pending', 'uploaded', 'confirmed', 'expired', 'deleted')),
    storage_key       text NOT NULL UNIQUE,
    upload_expires_at timestamptz NOT NULL,
    requested_at      timestamptz NOT NULL DEFAULT now(),
    created_at        timestamptz,          -- confirmation time (spec: createdAt)
    deleted_at        timestamptz,
    purged_at         timestamptz           -- object removed from storage
);
CREATE INDEX files_tenant_created ON dds.files (tenant_id, requested_at DESC, id);
CREATE INDEX files_tenant_entity ON dds.files (tenant_id, entity_name, entity_id, field_name);
CREATE INDEX files_tenant_mime ON dds.files (tenant_id, mime_type);
CREATE INDEX files_unpurged ON dds.files (deleted_at) WHERE status IN ('deleted', 'expired') AND purged_at IS NULL;

-- +goose Down
DROP TABLE dds.files;
