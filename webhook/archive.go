package webhook

import (
	"context"

	"github.com/lib/pq"

	"github.com/dds-project/dds/apperr"
)

// Exported is a webhook as a tenant export carries it: never its signing
// secret, which an import issues anew.
type Exported struct {
	SchemaName  string   `json:"schemaName,omitempty"`
	TargetURL   string   `json:"targetUrl"`
	EventTypes  []string `json:"eventTypes"`
	EntityNames []string `json:"entityNames,omitempty"`
	IsActive    bool     `json:"isActive"`
	RateLimit   *int     `json:"rateLimit,omitempty"`
}

// Export calls each with every webhook of the tenant, oldest first.
func (s *Store) Export(ctx context.Context, tenantID string, each func(Exported) error) error {
	var rows []struct {
		SchemaName  string         `db:"schema_name"`
		TargetURL   string         `db:"target_url"`
		EventTypes  pq.StringArray `db:"event_types"`
		EntityNames pq.StringArray `db:"entity_names"`
		IsActive    bool           `db:"is_active"`
		RateLimit   *int           `db:"rate_limit"`
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT schema_name, target_url, event_types, entity_names, is_active, rate_limit
		FROM dds.webhooks WHERE tenant_id = $1 ORDER BY created_at, id`, tenantID); err != nil {
		return apperr.Wrap(err, "export webhooks")
	}
	for _, r := range rows {
		if err := each(Exported{SchemaName: r.SchemaName, TargetURL: r.TargetURL, EventTypes: r.EventTypes, EntityNames: r.EntityNames, IsActive: r.IsActive,
			RateLimit: r.RateLimit}); err != nil {
			return err
		}
	}
	return nil
}

// Restore creates an exported webhook in a tenant with a new signing
// secret, validated as a new webhook is, and returns it (with the secret,
// which the import shows once).
func (s *Store) Restore(ctx context.Context, tenantID string, e Exported, allowPrivate bool) (*Webhook, error) {
	w, err := s.Create(ctx, tenantID, CreateInput{TargetURL: e.TargetURL, EventTypes: e.EventTypes, EntityNames: e.EntityNames, SchemaName: e.SchemaName,
		RateLimit: e.RateLimit}, allowPrivate)
	if err != nil {
		return nil, err
	}
	if !e.IsActive {
		if _, err := s.db.ExecContext(ctx, `UPDATE dds.webhooks SET is_active = false, disabled_reason = 'user', disabled_at = now() WHERE id = $1`, w.ID); err != nil {
			return nil, apperr.Wrap(err, "restore webhook")
		}
		w.IsActive = false
	}
	return w, nil
}
