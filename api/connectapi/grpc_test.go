package connectapi_test

import (
	"net/http"
	"testing"

	"connectrpc.com/connect"

	"github.com/dds-project/dds/internal/testenv"
	ddsv1 "github.com/dds-project/dds/proto/gen/dds/v1"
)

// TestPlainGRPC calls the record service with the gRPC protocol over
// unencrypted HTTP/2, as grpcurl or a generated gRPC client would.
func TestPlainGRPC(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	key := tenant(t, app)
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	h2c := &http.Client{Transport: &http.Transport{Protocols: &protocols}}
	c := records(&testenv.App{URL: app.URL, Server: app.Server, Client: h2c}, key, connect.WithGRPC())
	created, err := c.Create(t.Context(), connect.NewRequest(&ddsv1.CreateRequest{Entity: "Product", Record: obj(t, map[string]any{"name": "over gRPC"})}))
	if err != nil {
		t.Fatalf("gRPC create: %v", err)
	}
	if got := created.Msg.GetRecord().GetFields()["name"].GetStringValue(); got != "over gRPC" {
		t.Fatalf("created %v", created.Msg)
	}
	_, err = c.Create(t.Context(), connect.NewRequest(&ddsv1.CreateRequest{Entity: "Product", Record: obj(t, map[string]any{"price": "x"})}))
	wantCode(t, err, connect.CodeInvalidArgument)
}
