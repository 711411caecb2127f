package records

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// Files under rules (docs/files.md, "Files under rules"): the file API asks
// records whether a principal under row rules reaches a file through the
// records it may read, and whether it may attach an upload to a record.

// FileLinked reports whether a record the scope may read holds fileID in
// a FILE field the scope may read, on an entity its scopes let it read:
// the principal then reaches that file as it reaches the record. One
// statement, an EXISTS per such field, each under the entity's read rule
// (and soft delete), so a record hidden from the principal links nothing.
func (s *Store) FileLinked(ctx context.Context, sc *Scope, fileID string) (bool, error) {
	if !isUUID(fileID) { // not a file id: no record holds it
		return false, nil
	}
	var a query.Args
	id := a.Add(fileID, "uuid")
	var exists []string
	for i := range sc.Schema.Def.Entities {
		e := &sc.Schema.Def.Entities[i]
		if sc.principal.Require("entity", e.Name, "read") != nil {
			continue
		}
		var cols []string
		for _, f := range e.FileFields() {
			if sc.Readable(e.Name, f) {
				cols = append(cols, "t."+schema.Ident(f)+" = "+id)
			}
		}
		if len(cols) == 0 {
			continue
		}
		exists = append(exists, fmt.Sprintf(`EXISTS (SELECT 1 FROM %s t WHERE (%s) AND %s AND %s)`,
			sc.compiler.Table(e.Name), strings.Join(cols, " OR "), sc.compiler.Live(e.Name, "t"), sc.compiler.ReadRule(e.Name, "t", &a)))
	}
	if len(exists) == 0 {
		return false, nil
	}
	var ok bool
	if err := s.db.QueryRowContext(ctx, `SELECT `+strings.Join(exists, " OR "), sc.bind(a.List())...).Scan(&ok); err != nil {
		return false, apperr.Wrap(err, "could not check the records holding a file")
	}
	return ok, nil
}

// CheckFileTarget checks the record an upload names (POST
// /api/v1/files/upload-url with entityName, fieldName and entityId) for a
// principal under rules, as the write that will attach the file would:
// field must be a FILE field of entity that the principal may write
// (fields.write: 403 naming it), with the entity's update scope (create
// when no record is named yet); a named record must be one the principal
// may read and update (read rule and update.where), else 404 as for an
// absent record. Errors name the upload request's members.
func (s *Store) CheckFileTarget(ctx context.Context, sc *Scope, entity, field, id string) error {
	e, ok := sc.Schema.Def.Entity(entity)
	if !ok {
		return apperr.Field("entityName", "no entity %s in the active schema", entity)
	}
	op := "update"
	if id == "" {
		op = "create"
	}
	if err := sc.principal.Require("entity", e.Name, op); err != nil {
		return err
	}
	if field == "" {
		return apperr.Field("fieldName", "is required with entityName under row rules")
	}
	f, ok := e.Field(field)
	if !ok || f.Type != schema.File {
		return apperr.Field("fieldName", "%s is not a FILE field of %s", field, e.Name)
	}
	if err := checkWritable(e, sc.compiler.WriteRules(e.Name), map[string]any{field: nil}); err != nil {
		return err
	}
	if id == "" {
		return nil
	}
	pid, err := query.ParseID(e.Name, id)
	if err != nil {
		return apperr.New(apperr.NotFound, "%s %q not found", e.Name, id)
	}
	var a query.Args
	idArg := a.Add(pid, "uuid")
	var where query.Filter
	if wr := sc.compiler.WriteRules(e.Name); wr != nil {
		where = wr.UpdateWhere
	}
	w, err := sc.ruleWhere(e, where, "update.where", "t", &a)
	if err != nil {
		return err
	}
	var found bool
	err = s.db.QueryRowContext(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %s t WHERE t."id" = %s AND %s AND %s)`,
		sc.compiler.Table(e.Name), idArg, sc.compiler.Live(e.Name, "t"), w), sc.bind(a.List())...).Scan(&found)
	if err != nil {
		return MapError(sc, e.Name, err)
	}
	if !found {
		return apperr.New(apperr.NotFound, "%s %q not found", e.Name, id)
	}
	return nil
}

// verifyReach refuses, for a principal under rules, FILE values naming a
// file it may not reach: one it did not upload and that no record it may
// read holds (FileLinked). Otherwise a user who learnt another's file id
// could attach it to a record of its own and download it. The answer is
// the one a file of another tenant gets (VALIDATION_ERROR, the id named),
// so it reveals nothing. Unchanged values pass: the record holding them is
// readable, so they are linked.
func (s *Store) verifyReach(ctx context.Context, sc *Scope, ids []string) error {
	up := sc.Uploader()
	if up == "" {
		return nil
	}
	var valid []string
	for _, id := range ids {
		if u, err := uuid.Parse(id); err == nil {
			valid = append(valid, u.String())
		}
	}
	var others []string
	if err := s.db.SelectContext(ctx, &others, `SELECT id::text FROM dds.files
		WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND uploaded_by IS DISTINCT FROM $3`,
		sc.TenantID, valid, up); err != nil {
		return apperr.Wrap(err, "could not check files")
	}
	var bad []apperr.FieldError
	for _, id := range others {
		ok, err := s.FileLinked(ctx, sc, id)
		if err != nil {
			return err
		}
		if !ok {
			bad = append(bad, apperr.FieldError{Field: id, Message: "file does not exist, is not confirmed, or belongs to another tenant"})
		}
	}
	if len(bad) == 0 {
		return nil
	}
	e := apperr.Fields(bad)
	e.Message = fmt.Sprintf("file %s does not exist, is not confirmed, or belongs to another tenant", bad[0].Field)
	return e
}

// Uploader is the uploader name of the scope's principal (Uploader).
func (sc *Scope) Uploader() string { return Uploader(sc.principal) }

// Uploader names p as the uploader of files when it is under row rules
// ("user:<id>" for an end user, "key:<id>" for a role-bound key); "" for
// principals without roles, which reach every file of their tenant.
func Uploader(p *auth.Principal) string {
	switch {
	case len(p.Roles) == 0:
		return ""
	case p.UserID != "":
		return "user:" + p.UserID
	default:
		return "key:" + p.KeyID
	}
}

// FileReachable reports whether sc's principal reaches the tenant's file
// id: always without roles; under rules when it uploaded the file or a
// record it may read holds it (FileLinked). An import job reads the rows
// of its file only when its creator reaches the file.
func (s *Store) FileReachable(ctx context.Context, sc *Scope, id string) (bool, error) {
	up := sc.Uploader()
	if up == "" {
		return true, nil
	}
	if !isUUID(id) { // not a file id
		return false, nil
	}
	var mine bool
	if err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM dds.files WHERE tenant_id = $1 AND id = $2 AND uploaded_by = $3)`,
		sc.TenantID, id, up).Scan(&mine); err != nil {
		return false, apperr.Wrap(err, "could not check the file")
	}
	if mine {
		return true, nil
	}
	return s.FileLinked(ctx, sc, id)
}

func isUUID(s string) bool { return uuid.Validate(s) == nil }
