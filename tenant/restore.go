package tenant

import (
	"context"
	"strings"

	"github.com/dds-project/dds/apperr"
)

// Restore creates the row of an imported tenant under the id its import
// job chose, without a key (the import issues its keys anew).
func (s *Service) Restore(ctx context.Context, id, name string) error {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return apperr.Field("name", "is required (at most 200 characters)")
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO dds.tenants (id, name) VALUES ($1, $2)`, id, name); err != nil {
		return apperr.Wrap(err, "create tenant")
	}
	return nil
}
