package admin

import (
	"net/http"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/roles"
	"github.com/dds-project/dds/schema"
)

// pushBody is what `dds schema push` sends: the schema file's definition
// and, when the file has them, the tenant's roles (the whole set).
type pushBody struct {
	Schema *schema.Definition           `json:"schema"`
	Roles  map[string]*roles.Definition `json:"roles"`
}

// pushResult is the answer of POST /api/v1/schemas/push.
type pushResult struct {
	schema.PushResult
	Roles []roles.RoleChange `json:"roles,omitempty"`
}

// pushSchema is POST /api/v1/schemas/push[?allowDataLoss][&dryRun]
// (docs/schemas.md, Schemas as code): the schema of the body's name is
// created or evolved and, when roles is present, the tenant's roles
// become exactly those, in one transaction. The roles are validated
// against the pushed schema before anything is written (a role naming a
// field the push removes is a VALIDATION_ERROR naming
// roles.<name>.<path>). With dryRun nothing is written and the answer is
// the plan, roles validated. Needs schema create and update scopes, and
// with roles those of PUT and DELETE /api/v1/roles.
func (h *Handler) pushSchema(r *http.Request) (int, any, error) {
	p := api.Principal(r)
	for _, op := range []string{"create", "update"} {
		if err := p.Require("schema", "*", op); err != nil {
			return 0, nil, err
		}
	}
	allow, err1 := boolParam(r, "allowDataLoss")
	dry, err2 := boolParam(r, "dryRun")
	if e := apperr.Fields(append(err1, err2...)); e != nil {
		return 0, nil, e
	}
	var body pushBody
	if err := api.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	if body.Schema == nil {
		return 0, nil, apperr.Field("schema", "is required")
	}
	if err := schema.Validate(body.Schema); err != nil {
		return 0, nil, err
	}
	var also func(tx *sqlx.Tx, pgSchema string) error
	var changes []roles.RoleChange
	if body.Roles != nil {
		if h.id.Roles == nil {
			return 0, nil, apperr.Field("roles", "this server has no roles")
		}
		for _, op := range []string{"create", "update", "delete"} {
			if err := p.Require("role", "*", op); err != nil {
				return 0, nil, err
			}
		}
		if len(p.Roles) > 0 {
			return 0, nil, apperr.New(apperr.Forbidden, "a credential with a role cannot define roles")
		}
		// Validated against the pushed schema before the transaction
		// starts; its Postgres schema name only shapes SQL text here.
		scopes, err := roles.ValidateSet(body.Schema, "validate", body.Roles)
		if err != nil {
			return 0, nil, err
		}
		if !p.Scopes.Covers(scopes) {
			return 0, nil, apperr.New(apperr.Forbidden, "a role cannot grant scopes its creator lacks")
		}
		also = func(tx *sqlx.Tx, _ string) error {
			var err error
			changes, err = h.id.Roles.ReplaceTx(r.Context(), tx, p.TenantID, body.Roles)
			return err
		}
	}
	res, err := h.schemas.Push(r.Context(), p.TenantID, body.Schema, allow, dry, also)
	if err != nil {
		return 0, nil, err
	}
	if body.Roles != nil && !dry {
		h.id.Roles.Invalidate(p.TenantID)
	}
	status := http.StatusOK
	if res.Created && !dry {
		status = http.StatusCreated
	}
	return status, pushResult{PushResult: res, Roles: changes}, nil
}
