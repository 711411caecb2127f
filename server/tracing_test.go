package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	tworker "go.temporal.io/sdk/worker"

	"github.com/dds-project/dds/files"
	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/obs"
	"github.com/dds-project/dds/storage"
)

// One request id leads to its trace: the HTTP span, the SQL statements it
// ran and the Temporal workflow and activities it started, recorded by an
// in-process span recorder through the real server and a real worker.
func TestTraceFromRequestThroughSQLIntoActivities(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	cfg := testenv.Config(t)
	cfg.FileStorageDriver, cfg.FileStorageLocalDir = "local", t.TempDir()
	cfg.TemporalTaskQueue = "tracing-test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	app := testenv.NewServer(t, cfg)

	interceptors, err := obs.TemporalInterceptors()
	if err != nil || len(interceptors) == 0 {
		t.Fatalf("temporal interceptors with tracing on: %v %v", interceptors, err)
	}
	tc, err := client.Dial(client.Options{HostPort: cfg.TemporalAddress, Interceptors: interceptors,
		Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	store, err := storage.Open(context.Background(), storage.FromConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	w := tworker.New(tc, cfg.TemporalTaskQueue, tworker.Options{})
	files.Register(w, testenv.DB(t), store)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	_, key := app.Tenant(t)
	r := app.Do(t, "POST", "/api/v1/files/upload-url", key,
		map[string]any{"fileName": "a.txt", "mimeType": "text/plain", "sizeBytes": 5}, "X-Request-Id", "trace-req-1")
	if r.Status != http.StatusCreated {
		t.Fatalf("upload-url: %d %s", r.Status, r.Body)
	}
	fileID := r.JSON(t)["fileId"].(string)
	// Nothing was uploaded: confirm runs the check activity, which says so.
	if r := app.Do(t, "POST", "/api/v1/files/"+fileID+"/confirm", key, nil); r.Status != http.StatusConflict {
		t.Fatalf("confirm without upload: %d %s", r.Status, r.Body)
	}

	var spans []sdktrace.ReadOnlySpan
	var request sdktrace.ReadOnlySpan
	deadline := time.Now().Add(30 * time.Second)
	for {
		spans = rec.Ended()
		request = nil
		for _, s := range spans {
			for _, a := range s.Attributes() {
				if a.Key == "dds.request_id" && a.Value.AsString() == "trace-req-1" {
					request = s
				}
			}
		}
		if request != nil && find(spans, "RunActivity:FileConfirmUpload") != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // spans end on the worker's goroutines; poll the recorder
	}
	if request == nil {
		t.Fatal("no HTTP span carries dds.request_id=trace-req-1")
	}
	if request.Name() != "POST /api/v1/files/upload-url" {
		t.Errorf("HTTP span name %q, want the route pattern", request.Name())
	}
	trace := request.SpanContext().TraceID()
	var sqlInTrace, startInTrace bool
	for _, s := range spans {
		if s.SpanContext().TraceID() != trace {
			continue
		}
		if strings.HasPrefix(s.Name(), "sql.") {
			for _, a := range s.Attributes() {
				if strings.Contains(a.Value.String(), "dds.files") {
					sqlInTrace = true
				}
			}
		}
		if s.Name() == "StartWorkflow:FileUpload" {
			startInTrace = true
		}
	}
	if !sqlInTrace {
		t.Error("the request's trace has no SQL span of its INSERT into dds.files")
	}
	if !startInTrace {
		t.Error("the request's trace has no StartWorkflow:FileUpload span")
	}
	act := find(spans, "RunActivity:FileConfirmUpload")
	if act == nil {
		t.Fatal("the worker recorded no RunActivity:FileConfirmUpload span")
	}
	if act.SpanContext().TraceID() != trace && !sameTraceAsHTTP(spans, act) {
		t.Error("the activity span belongs to no request's trace")
	}
}

func find(spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	for _, s := range spans {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

// sameTraceAsHTTP reports whether s shares its trace with an HTTP request
// span (the confirm's update may carry the activity into its own trace).
func sameTraceAsHTTP(spans []sdktrace.ReadOnlySpan, s sdktrace.ReadOnlySpan) bool {
	for _, o := range spans {
		if strings.HasPrefix(o.Name(), "POST /api/v1/files/") && o.SpanContext().TraceID() == s.SpanContext().TraceID() {
			return true
		}
	}
	return false
}
