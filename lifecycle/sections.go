package lifecycle

import (
	"context"
	"time"

	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/webhook"
)

// Section is a part of a tenant, beside its schemas, data and files, that
// an archive carries as one NDJSON entry (sections/<Name>.ndjson): API
// keys and webhooks today. It is the extension point for what later
// packages add to a tenant: roles and identity providers implement Section
// in their own package and are appended to Deps.Sections by the worker.
// Export never writes a secret or a hash; Import issues secrets anew and
// returns what the import job's result shows once (nil for nothing).
type Section interface {
	Name() string
	Export(ctx context.Context, tenantID string, write func(v any) error) error
	// Import reads the entries with next (false at the end), decoding each
	// into the value it is given.
	Import(ctx context.Context, tenantID string, next func(v any) (bool, error)) (shown any, err error)
}

// DefaultSections are the sections of every archive today: API keys and
// webhooks.
func DefaultSections(keys *auth.Keys, webhooks *webhook.Store, allowPrivate bool) []Section {
	return []Section{KeysSection{Keys: keys}, WebhooksSection{Store: webhooks, AllowPrivate: allowPrivate}}
}

// KeysSection carries API-key metadata: name, display prefix, scopes and
// times, never the key or its hash. An import issues each key anew (same
// name and scopes), and an admin key (*:*:*) when none of them has it.
type KeysSection struct{ Keys *auth.Keys }

type exportedKey struct {
	Name      string     `json:"name"`
	Prefix    string     `json:"prefix"`
	Scopes    []string   `json:"scopes"`
	CreatedAt time.Time  `json:"createdAt"`
	LastUsed  *time.Time `json:"lastUsed,omitempty"`
}

// Name implements Section.
func (KeysSection) Name() string { return "apiKeys" }

// Export implements Section.
func (s KeysSection) Export(ctx context.Context, tenantID string, write func(v any) error) error {
	keys, err := s.Keys.List(ctx, tenantID)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := write(exportedKey{Name: k.Name, Prefix: k.Prefix, Scopes: k.Scopes, CreatedAt: k.CreatedAt, LastUsed: k.LastUsed}); err != nil {
			return err
		}
	}
	return nil
}

// Import implements Section.
func (s KeysSection) Import(ctx context.Context, tenantID string, next func(v any) (bool, error)) (any, error) {
	out := []auth.NewKeyResult{}
	admin := false
	for {
		var k exportedKey
		ok, err := next(&k)
		if err != nil || !ok {
			if err != nil {
				return nil, err
			}
			break
		}
		scopes, err := auth.ParseScopes(k.Scopes)
		if err != nil {
			return nil, err
		}
		nk, err := s.Keys.Create(ctx, tenantID, k.Name, scopes)
		if err != nil {
			return nil, err
		}
		admin = admin || scopes.Covers(adminScopes())
		out = append(out, nk)
	}
	if !admin {
		nk, err := s.Keys.Create(ctx, tenantID, "admin", adminScopes())
		if err != nil {
			return nil, err
		}
		out = append(out, nk)
	}
	return out, nil
}

func adminScopes() auth.Scopes {
	s, _ := auth.ParseScopes([]string{"*:*:*"})
	return s
}

// WebhooksSection carries webhooks without their signing secrets; an
// import creates each with a new secret.
type WebhooksSection struct {
	Store        *webhook.Store
	AllowPrivate bool // the deployment's DDS_WEBHOOK_ALLOW_PRIVATE
}

// Name implements Section.
func (WebhooksSection) Name() string { return "webhooks" }

// Export implements Section.
func (s WebhooksSection) Export(ctx context.Context, tenantID string, write func(v any) error) error {
	return s.Store.Export(ctx, tenantID, func(e webhook.Exported) error { return write(e) })
}

type shownWebhook struct {
	ID            string `json:"id"`
	TargetURL     string `json:"targetUrl"`
	SigningSecret string `json:"signingSecret"`
}

// Import implements Section.
func (s WebhooksSection) Import(ctx context.Context, tenantID string, next func(v any) (bool, error)) (any, error) {
	out := []shownWebhook{}
	for {
		var e webhook.Exported
		ok, err := next(&e)
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		w, err := s.Store.Restore(ctx, tenantID, e, s.AllowPrivate)
		if err != nil {
			return nil, err
		}
		out = append(out, shownWebhook{ID: w.ID, TargetURL: w.TargetURL, SigningSecret: w.SigningSecret})
	}
}
