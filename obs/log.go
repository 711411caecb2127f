package obs

import (
	"context"
	"log/slog"
)

// RequestLogger is what a request's context carries for logging: the HTTP
// middleware keeps its per-request record there, which builds a logger
// carrying the request id only when something logs, so a quiet request
// allocates no logger. Packages below the HTTP layer (the GraphQL engine,
// records) log through LoggerFrom without knowing that layer.
type RequestLogger interface {
	Logger() *slog.Logger
}

type requestKey struct{}

// WithRequest returns ctx carrying r.
func WithRequest(ctx context.Context, r RequestLogger) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// Request returns the RequestLogger ctx carries, nil when there is none.
func Request(ctx context.Context) RequestLogger {
	r, _ := ctx.Value(requestKey{}).(RequestLogger)
	return r
}

// LoggerFrom returns the request's logger (with its request id), or the
// default logger outside a request.
func LoggerFrom(ctx context.Context) *slog.Logger {
	if r := Request(ctx); r != nil {
		return r.Logger()
	}
	return slog.Default()
}
