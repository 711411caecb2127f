-- Who requested a file's upload, for principals under row rules
-- (docs/files.md, "Files under rules"): "user:<id>" for an end user,
-- "key:<id>" for a role-bound key; NULL for keys and tokens without roles,
-- which reach every file of their tenant. A ruled principal reaches a file
-- it uploaded, or one a record it may read holds in a FILE field it may read.

-- +goose Up
ALTER TABLE dds.files ADD COLUMN uploaded_by text;
CREATE INDEX files_uploaded_by ON dds.files (tenant_id, uploaded_by, requested_at DESC) WHERE uploaded_by IS NOT NULL;

-- +goose Down
DROP INDEX dds.files_uploaded_by;
ALTER TABLE dds.files DROP COLUMN uploaded_by;
