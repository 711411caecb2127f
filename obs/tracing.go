package obs

import (
	"context"
	"database/sql/driver"
	"errors"
	"os"
	"strings"

	"github.com/XSAM/otelsql"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// TracingEnabled reports whether the standard OpenTelemetry environment asks
// for traces: an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and neither OTEL_SDK_DISABLED=true nor
// OTEL_TRACES_EXPORTER=none turns them off. Traces are off by default.
func TracingEnabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || os.Getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// SetupTracing installs, when TracingEnabled, an SDK tracer provider
// exporting over OTLP/HTTP (configured by the OTEL_* variables: endpoint,
// headers, sampler, resource attributes, OTEL_SERVICE_NAME) as the process's
// OpenTelemetry provider, with W3C trace-context propagation. The HTTP
// server, the database driver and the Temporal client all trace through
// that provider. The returned function flushes and stops it.
func SetupTracing(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	if !TracingEnabled() {
		return func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(service)))
	if err != nil {
		return nil, err
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default name.
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return func(ctx context.Context) error { return errors.Join(tp.ForceFlush(ctx), tp.Shutdown(ctx)) }, nil
}

// Tracing reports whether an SDK tracer provider is installed (by
// SetupTracing, or by a test's span recorder). The HTTP handler, the
// database driver and the Temporal client are instrumented only then, so
// a process without tracing pays nothing for it.
func Tracing() bool {
	_, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider)
	return ok
}

// SQLOptions are the tracing options of the database driver wrapper: one
// span per statement of a traced request (statements of background loops
// outside any trace make no root spans), without the per-row and
// session-reset spans.
func SQLOptions() []otelsql.Option {
	return []otelsql.Option{
		otelsql.WithAttributes(semconv.DBSystemPostgreSQL),
		otelsql.WithSpanOptions(otelsql.SpanOptions{
			OmitConnResetSession: true, OmitRows: true, OmitConnPrepare: true, DisableErrSkip: true,
			SpanFilter: func(ctx context.Context, _ otelsql.Method, _ string, _ []driver.NamedValue) bool {
				return trace.SpanContextFromContext(ctx).IsValid()
			},
		}),
	}
}

// TemporalInterceptors are the Temporal client interceptors that carry the
// trace of a request into the workflows it starts and their activities.
func TemporalInterceptors() ([]interceptor.ClientInterceptor, error) {
	if !Tracing() {
		return nil, nil
	}
	ti, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{})
	if err != nil {
		return nil, err
	}
	return []interceptor.ClientInterceptor{ti}, nil
}
