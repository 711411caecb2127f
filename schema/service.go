package schema

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/db"
)

// Info is a stored schema as the management API shows it.
type Info struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Version   int       `json:"version"`
	Active    bool      `json:"active"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	Definition
}

// Active is a tenant's active schema version, as served by the dynamic APIs.
// It is immutable; consumers cache derived artefacts (compilers, GraphQL
// schemas) on it with Memo, so they are built once per version.
type Active struct {
	TenantID string
	ID       string
	Name     string
	Version  int
	PgSchema string
	Def      *Definition
	memo     sync.Map
}

// Memo returns the value cached under key, building it once.
// Lookup returns the value kept under key, if any (for values whose
// build can fail, which Memo cannot report).
func (a *Active) Lookup(key string) (any, bool) { return a.memo.Load(key) }

func (a *Active) Memo(key string, build func() any) any {
	if v, ok := a.memo.Load(key); ok {
		return v
	}
	v, _ := a.memo.LoadOrStore(key, build())
	return v
}

// Service stores schemas, applies their DDL, and caches each tenant's active
// schema (invalidated through NOTIFY dds_schemas on every replica).
type Service struct {
	db *sqlx.DB

	mu     sync.RWMutex
	active map[string]*Active
}

// NewService returns a schema service over db.
func NewService(db *sqlx.DB) *Service { return &Service{db: db, active: map[string]*Active{}} }

// Invalidate drops the cached active schema of a tenant.
func (s *Service) Invalidate(tenantID string) {
	s.mu.Lock()
	delete(s.active, tenantID)
	s.mu.Unlock()
}

// Flush drops every cached active schema.
func (s *Service) Flush() {
	s.mu.Lock()
	s.active = map[string]*Active{}
	s.mu.Unlock()
}

// ActiveFor returns the tenant's active schema.
func (s *Service) ActiveFor(ctx context.Context, tenantID string) (*Active, error) {
	s.mu.RLock()
	a, ok := s.active[tenantID]
	s.mu.RUnlock()
	if ok {
		return a, nil
	}
	var row struct {
		ID       string `db:"id"`
		Name     string `db:"name"`
		Version  int    `db:"version"`
		PgSchema string `db:"pg_schema"`
		Def      []byte `db:"definition"`
	}
	err := s.db.GetContext(ctx, &row, `SELECT id, name, version, pg_schema, definition FROM dds.schemas WHERE tenant_id = $1 AND active`, tenantID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "this tenant has no active schema; create one with POST /api/v1/schemas")
	}
	if err != nil {
		return nil, apperr.Wrap(err, "load active schema")
	}
	var def Definition
	if err := json.Unmarshal(row.Def, &def); err != nil {
		return nil, apperr.Wrap(err, "decode stored schema")
	}
	a = &Active{TenantID: tenantID, ID: row.ID, Name: row.Name, Version: row.Version, PgSchema: row.PgSchema, Def: &def}
	s.mu.Lock()
	s.active[tenantID] = a
	s.mu.Unlock()
	return a, nil
}

const infoCols = `id, name, version, active, created_at, updated_at, definition`

type infoRow struct {
	ID        string    `db:"id"`
	Name      string    `db:"name"`
	Version   int       `db:"version"`
	Active    bool      `db:"active"`
	CreatedAt time.Time `db:"created_at"`
	UpdatedAt time.Time `db:"updated_at"`
	Def       []byte    `db:"definition"`
}

func (r infoRow) info() (Info, error) {
	i := Info{ID: r.ID, Name: r.Name, Version: r.Version, Active: r.Active, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	err := json.Unmarshal(r.Def, &i.Definition)
	return i, err
}

// List returns the tenant's schemas.
func (s *Service) List(ctx context.Context, tenantID string) ([]Info, error) {
	var rows []infoRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT `+infoCols+` FROM dds.schemas WHERE tenant_id = $1 ORDER BY created_at, id`, tenantID); err != nil {
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

// Get returns one of the tenant's schemas.
func (s *Service) Get(ctx context.Context, tenantID, id string) (Info, error) {
	return s.get(ctx, s.db, tenantID, id, false)
}

func (s *Service) get(ctx context.Context, q sqlx.QueryerContext, tenantID, id string, lock bool) (Info, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Info{}, apperr.New(apperr.NotFound, "schema %q not found", id)
	}
	sqlText := `SELECT ` + infoCols + ` FROM dds.schemas WHERE tenant_id = $1 AND id = $2`
	if lock {
		sqlText += " FOR UPDATE"
	}
	var r infoRow
	err := sqlx.GetContext(ctx, q, &r, sqlText, tenantID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return Info{}, apperr.New(apperr.NotFound, "schema %q not found", id)
	}
	if err != nil {
		return Info{}, apperr.Wrap(err, "load schema")
	}
	i, err := r.info()
	if err != nil {
		return Info{}, apperr.Wrap(err, "decode stored schema")
	}
	return i, nil
}

// Create validates def, creates its tables in one transaction and stores it
// as version 1. A tenant's first schema becomes active.
func (s *Service) Create(ctx context.Context, tenantID string, def *Definition) (Info, error) {
	if err := Validate(def); err != nil {
		return Info{}, err
	}
	var info Info
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		var err error
		info, _, err = s.createIn(ctx, tx, tenantID, def)
		return err
	})
	if err != nil {
		return Info{}, err
	}
	s.Invalidate(tenantID)
	return info, nil
}

// createIn is Create inside tx, for a validated def; it also returns the
// plan it applied.
func (s *Service) createIn(ctx context.Context, tx *sqlx.Tx, tenantID string, def *Definition) (Info, Plan, error) {
	id := uuid.Must(uuid.NewV7()).String()
	pg := PgSchemaName(id)
	plan, _ := Diff(pg, nil, def)
	raw, _ := json.Marshal(def)
	var info Info
	err := func() error {
		var hasActive bool
		if err := tx.GetContext(ctx, &hasActive, `SELECT EXISTS (SELECT 1 FROM dds.schemas WHERE tenant_id = $1 AND active)`, tenantID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO dds.schemas (id, tenant_id, name, definition, pg_schema, active) VALUES ($1, $2, $3, $4, $5, $6)`,
			id, tenantID, def.Name, raw, pg, !hasActive)
		if err != nil {
			return uniqueError(err, def.Name)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO dds.schema_versions (schema_id, version, definition) VALUES ($1, 1, $2)`, id, raw); err != nil {
			return err
		}
		if err := apply(ctx, tx, plan); err != nil {
			return err
		}
		info, err = s.get(ctx, tx, tenantID, id, false)
		return err
	}()
	return info, plan, err
}

// UpdateResult is an evolved schema and the plan that was applied.
type UpdateResult struct {
	Info
	Plan Plan `json:"plan"`
}

// Update evolves a schema to def as a new version. Additive changes apply
// online; a plan with destructive steps is refused with CONFLICT (carrying
// the plan) unless allowDataLoss. With dryRun nothing is applied and the
// plan, destructive steps included, is returned.
func (s *Service) Update(ctx context.Context, tenantID, id string, def *Definition, allowDataLoss, dryRun bool) (UpdateResult, error) {
	if err := Validate(def); err != nil {
		return UpdateResult{}, err
	}
	var res UpdateResult
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		var err error
		res, err = s.updateIn(ctx, tx, tenantID, id, def, allowDataLoss, dryRun)
		return err
	})
	if errors.Is(err, errDryRun) {
		return res, nil
	}
	if err != nil {
		return UpdateResult{}, err
	}
	s.Invalidate(tenantID)
	return res, nil
}

// updateIn is Update inside tx, for a validated def: errDryRun (with the
// result) after planning when dryRun.
func (s *Service) updateIn(ctx context.Context, tx *sqlx.Tx, tenantID, id string, def *Definition, allowDataLoss, dryRun bool) (UpdateResult, error) {
	var res UpdateResult
	err := func() error {
		cur, err := s.get(ctx, tx, tenantID, id, true)
		if err != nil {
			return err
		}
		plan, problems := Diff(PgSchemaName(id), &cur.Definition, def)
		if len(problems) > 0 {
			details := make([]apperr.FieldError, len(problems))
			for i, p := range problems {
				field, msg, _ := strings.Cut(p, ": ")
				details[i] = apperr.FieldError{Field: "entities." + field, Message: msg}
			}
			return apperr.Fields(details)
		}
		res.Plan = plan
		if dryRun { // a preview: destructive or not, the plan is the answer
			res.Info = cur
			return errDryRun
		}
		if d := plan.Destructive(); len(d) > 0 && !allowDataLoss {
			e := apperr.New(apperr.Conflict, "the change drops data (%d destructive steps); repeat with ?allowDataLoss=true to apply it", len(d))
			e.Extra = map[string]any{"plan": plan}
			return e
		}
		raw, _ := json.Marshal(def)
		_, err = tx.ExecContext(ctx, `UPDATE dds.schemas SET name = $3, definition = $4, version = version + 1, updated_at = now() WHERE tenant_id = $1 AND id = $2`,
			tenantID, id, def.Name, raw)
		if err != nil {
			return uniqueError(err, def.Name)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO dds.schema_versions (schema_id, version, definition) SELECT id, version, definition FROM dds.schemas WHERE id = $1`, id); err != nil {
			return err
		}
		if err := apply(ctx, tx, plan); err != nil {
			return err
		}
		res.Info, err = s.get(ctx, tx, tenantID, id, false)
		return err
	}()
	return res, err
}

var errDryRun = errors.New("dry run")

// Activate makes a schema the tenant's active one.
func (s *Service) Activate(ctx context.Context, tenantID, id string) (Info, error) {
	var info Info
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if info, err = s.get(ctx, tx, tenantID, id, true); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE dds.schemas SET active = false WHERE tenant_id = $1 AND active AND id <> $2`, tenantID, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE dds.schemas SET active = true, updated_at = now() WHERE id = $1`, id); err != nil {
			return err
		}
		info.Active = true
		return nil
	})
	if err != nil {
		return Info{}, err
	}
	s.Invalidate(tenantID)
	return info, nil
}

func apply(ctx context.Context, tx *sqlx.Tx, plan Plan) error {
	if _, err := tx.ExecContext(ctx, `SET LOCAL lock_timeout = '10s'`); err != nil {
		return err
	}
	for _, st := range plan.Steps {
		if _, err := tx.ExecContext(ctx, st.SQL); err != nil {
			if pe, ok := db.PgError(err); ok && (pe.Code[:2] == "23" || pe.Code[:2] == "22") {
				return &apperr.Error{Code: apperr.Conflict, Message: fmt.Sprintf("cannot %s: %s", st.Description, pe.Message), Err: err}
			}
			return fmt.Errorf("%s: %w", st.Description, err)
		}
	}
	return nil
}

func (s *Service) tx(ctx context.Context, fn func(*sqlx.Tx) error) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return apperr.Wrap(err, "begin")
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) || errors.Is(err, errDryRun) {
			return err
		}
		return apperr.Wrap(err, "schema change failed")
	}
	if err := tx.Commit(); err != nil {
		return apperr.Wrap(err, "commit")
	}
	return nil
}

// uniqueError names what a unique violation on dds.schemas means: a taken
// name, or another first schema of the tenant created at the same moment
// (both tried to become the active one). Other errors pass through.
func uniqueError(err error, name string) error {
	pe, ok := db.PgError(err)
	if !ok || pe.Code != "23505" {
		return err
	}
	if pe.ConstraintName == "schemas_one_active" {
		return &apperr.Error{Code: apperr.Conflict, Message: "another schema of this tenant was created at the same moment; retry", Err: err}
	}
	return apperr.Field("name", "a schema named %q already exists", name)
}
