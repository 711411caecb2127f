package jobs

import (
	"encoding/json"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/records"
)

// Jobs of a principal under rules (docs/auth.md, "Rules on every write
// path"): the job records who created it, with the roles and claims its
// rules read, in its spec's "principal" member (kept out of the job's API
// form), and the worker runs every step as that principal, so a job's
// items are under the same rules as the synchronous path's. Jobs of keys
// and tokens without roles run as the system principal, as before.

// jobPrincipal is the recorded creator of a job.
type jobPrincipal struct {
	KeyID  string         `json:"keyId,omitempty"`
	UserID string         `json:"userId,omitempty"`
	Roles  []string       `json:"roles"`
	Claims map[string]any `json:"claims,omitempty"`
}

// storedSpec is the spec as dds.jobs stores it.
type storedSpec struct {
	Spec
	Principal *jobPrincipal `json:"principal,omitempty"`
}

// encodeSpec is the stored spec of a job p creates.
func encodeSpec(spec Spec, p *auth.Principal) ([]byte, error) {
	st := storedSpec{Spec: spec}
	if len(p.Roles) > 0 {
		st.Principal = &jobPrincipal{KeyID: p.KeyID, UserID: p.UserID, Roles: p.Roles, Claims: p.Claims}
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, apperr.Wrap(err, "encode job")
	}
	return b, nil
}

// principal is who the job's steps run as: its recorded creator, or the
// system principal of its tenant.
func (r *jobRow) principal() (*auth.Principal, error) {
	p := records.SystemPrincipal(r.TenantID)
	var st struct {
		Principal *jobPrincipal `json:"principal"`
	}
	if err := json.Unmarshal(r.Spec, &st); err != nil {
		return nil, apperr.Wrap(err, "decode job spec")
	}
	if jp := st.Principal; jp != nil {
		p.KeyID, p.UserID, p.Roles, p.Claims = jp.KeyID, jp.UserID, jp.Roles, jp.Claims
	}
	return p, nil
}
