package operation

import (
	"testing"

	"github.com/dds-project/dds/auth"
)

func principal(t *testing.T, scopes ...string) *auth.Principal {
	t.Helper()
	ss, err := auth.ParseScopes(scopes)
	if err != nil {
		t.Fatal(err)
	}
	return &auth.Principal{TenantID: "t", Scopes: ss}
}
