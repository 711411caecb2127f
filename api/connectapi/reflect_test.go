package connectapi_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/proto/gen/dds/v1/ddsv1connect"
)

// A gRPC client without the .proto files discovers the services and their
// descriptors by server reflection over HTTP/2 cleartext, as grpcurl does.
func TestGRPCReflection(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	h2c := &http.Client{Transport: &http.Transport{Protocols: &protocols}}
	stream := grpcreflect.NewClient(h2c, app.URL, connect.WithGRPC()).NewStream(context.Background())
	defer stream.Close() //nolint:errcheck // the test is over

	names, err := stream.ListServices()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{ddsv1connect.RecordServiceName, ddsv1connect.SchemaServiceName} {
		if !slices.Contains(names, protoreflect.FullName(want)) {
			t.Errorf("services %v lack %s", names, want)
		}
	}
	files, err := stream.FileContainingSymbol(ddsv1connect.RecordServiceName)
	if err != nil {
		t.Fatal(err)
	}
	var methods []string
	for _, f := range files {
		for _, s := range f.GetService() {
			if s.GetName() == "RecordService" {
				for _, m := range s.GetMethod() {
					methods = append(methods, m.GetName())
				}
			}
		}
	}
	if !slices.Contains(methods, "List") || !slices.Contains(methods, "Create") {
		t.Fatalf("RecordService methods %v, want List and Create among them", methods)
	}
}
