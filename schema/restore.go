package schema

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
)

// StoredVersion is one version of a schema as stored: what a tenant
// export carries and an import restores.
type StoredVersion struct {
	Version    int             `json:"version" db:"version"`
	Definition json.RawMessage `json:"definition" db:"definition"`
	CreatedAt  time.Time       `json:"createdAt" db:"created_at"`
}

// Versions returns every version of a schema of the tenant, oldest first.
func (s *Service) Versions(ctx context.Context, q sqlx.QueryerContext, tenantID, id string) ([]StoredVersion, error) {
	out := []StoredVersion{}
	err := sqlx.SelectContext(ctx, q, &out, `SELECT v.version, v.definition, v.created_at FROM dds.schema_versions v
		JOIN dds.schemas s ON s.id = v.schema_id WHERE s.tenant_id = $1 AND s.id = $2 ORDER BY v.version`, tenantID, id)
	if err != nil {
		return nil, apperr.Wrap(err, "list schema versions")
	}
	return out, nil
}

// Restore recreates a schema in a tenant from an export: its tables from
// the definition of its last version, every version of its history as it
// was, and whether it is the active one. The definition is validated as a
// new schema's would be; an archive's bytes are not trusted.
func (s *Service) Restore(ctx context.Context, tenantID string, versions []StoredVersion, active bool) (Info, error) {
	if len(versions) == 0 {
		return Info{}, apperr.Field("versions", "a schema needs at least one version")
	}
	last := versions[len(versions)-1]
	var def Definition
	if err := json.Unmarshal(last.Definition, &def); err != nil {
		return Info{}, apperr.Field("definition", "is not a schema definition: %v", err)
	}
	if err := Validate(&def); err != nil {
		return Info{}, err
	}
	id := uuid.Must(uuid.NewV7()).String()
	pg := PgSchemaName(id)
	plan, _ := Diff(pg, nil, &def)
	raw, _ := json.Marshal(&def)
	var info Info
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO dds.schemas (id, tenant_id, name, version, definition, pg_schema, active) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			id, tenantID, def.Name, last.Version, raw, pg, active)
		if err != nil {
			return uniqueError(err, def.Name)
		}
		for _, v := range versions {
			var vd Definition
			if err := json.Unmarshal(v.Definition, &vd); err != nil {
				return apperr.Field("definition", "version %d is not a schema definition: %v", v.Version, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO dds.schema_versions (schema_id, version, definition, created_at) VALUES ($1, $2, $3, $4)`,
				id, v.Version, []byte(v.Definition), v.CreatedAt); err != nil {
				return apperr.Field("versions", "version %d: %v", v.Version, err)
			}
		}
		if err := apply(ctx, tx, plan); err != nil {
			return err
		}
		info, err = s.get(ctx, tx, tenantID, id, false)
		return err
	})
	if err != nil {
		return Info{}, err
	}
	s.Invalidate(tenantID)
	return info, nil
}

// ListIn is List read in q (a tenant export's snapshot).
func (s *Service) ListIn(ctx context.Context, q sqlx.QueryerContext, tenantID string) ([]Info, error) {
	var rows []infoRow
	if err := sqlx.SelectContext(ctx, q, &rows, `SELECT `+infoCols+` FROM dds.schemas WHERE tenant_id = $1 ORDER BY created_at, id`, tenantID); err != nil {
		return nil, apperr.Wrap(err, "list schemas")
	}
	out := make([]Info, 0, len(rows))
	for _, r := range rows {
		i, err := r.info()
		if err != nil {
			return nil, apperr.Wrap(err, "decode stored schema")
		}
		out = append(out, i)
	}
	return out, nil
}
