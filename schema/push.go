package schema

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx"
)

// PushResult is the answer of Push: the schema as it is after the push
// (or would be: a dry run of a new schema has no id), the plan applied
// and whether the schema was created.
type PushResult struct {
	Info
	Plan    Plan `json:"plan"`
	Created bool `json:"created"`
}

// Push applies def to the tenant's schema of the same name, creating it
// when there is none (Create) or evolving it (Update, with its rules on
// destructive plans and dryRun), and runs also(tx, pgSchema) in the same
// transaction after the schema change: what also writes commits with the
// schema or not at all. With dryRun nothing is committed, also included.
func (s *Service) Push(ctx context.Context, tenantID string, def *Definition, allowDataLoss, dryRun bool, also func(tx *sqlx.Tx, pgSchema string) error) (PushResult, error) {
	if err := Validate(def); err != nil {
		return PushResult{}, err
	}
	var res PushResult
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		var id string
		err := tx.GetContext(ctx, &id, `SELECT id FROM dds.schemas WHERE tenant_id = $1 AND name = $2`, tenantID, def.Name)
		switch {
		case err == nil:
			up, err := s.updateIn(ctx, tx, tenantID, id, def, allowDataLoss, dryRun)
			res.Info, res.Plan = up.Info, up.Plan
			if err != nil && !errors.Is(err, errDryRun) {
				return err
			}
		case errors.Is(err, sql.ErrNoRows):
			res.Created = true
			if res.Info, res.Plan, err = s.createIn(ctx, tx, tenantID, def); err != nil {
				return err
			}
		default:
			return err
		}
		if also != nil {
			if err := also(tx, PgSchemaName(res.ID)); err != nil {
				return err
			}
		}
		if dryRun {
			if res.Created { // nothing of it is kept
				res.Info = Info{Name: def.Name, Definition: *def}
			}
			return errDryRun
		}
		return nil
	})
	if errors.Is(err, errDryRun) {
		return res, nil
	}
	if err != nil {
		return PushResult{}, err
	}
	s.Invalidate(tenantID)
	return res, nil
}
