// Package tenant creates tenants, each with its first admin API key.
package tenant

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
)

// Created is a new tenant and its admin key (shown once).
type Created struct {
	TenantID  string    `json:"tenantId"`
	Name      string    `json:"name"`
	KeyID     string    `json:"keyId"`
	APIKey    string    `json:"apiKey"`
	CreatedAt time.Time `json:"createdAt"`
}

// Service creates tenants.
type Service struct {
	db   *sqlx.DB
	keys *auth.Keys
}

// NewService returns a tenant service.
func NewService(db *sqlx.DB, keys *auth.Keys) *Service { return &Service{db: db, keys: keys} }

// Named returns the id of the oldest tenant called name (sql.ErrNoRows
// when there is none); `dds dev` finds its dev tenant with it.
func (s *Service) Named(ctx context.Context, name string) (string, error) {
	var id string
	err := s.db.GetContext(ctx, &id, `SELECT id FROM dds.tenants WHERE name = $1 ORDER BY created_at LIMIT 1`, name)
	return id, err
}

// Create makes a tenant and an admin key with *:*:* in one transaction.
func (s *Service) Create(ctx context.Context, name string) (Created, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return Created{}, apperr.Field("name", "is required (at most 200 characters)")
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return Created{}, apperr.Wrap(err, "begin")
	}
	defer tx.Rollback()
	c := Created{TenantID: uuid.Must(uuid.NewV7()).String(), Name: name}
	if err := tx.GetContext(ctx, &c.CreatedAt, `INSERT INTO dds.tenants (id, name) VALUES ($1, $2) RETURNING created_at`, c.TenantID, name); err != nil {
		return Created{}, apperr.Wrap(err, "create tenant")
	}
	admin, _ := auth.ParseScopes([]string{"*:*:*"})
	k, err := s.keys.CreateIn(ctx, tx, c.TenantID, "admin", admin)
	if err != nil {
		return Created{}, err
	}
	if err := tx.Commit(); err != nil {
		return Created{}, apperr.Wrap(err, "commit")
	}
	c.KeyID, c.APIKey = k.ID, k.Key
	return c, nil
}
