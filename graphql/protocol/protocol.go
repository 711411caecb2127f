// Package protocol holds what the GraphQL engine and its transports
// exchange: a request (query, operation name, variables) and its result
// (data and errors, with their locations), written as GraphQL over HTTP
// and graphql-transport-ws carry them. It owns no behaviour beyond
// rendering a result and the request errors every part raises.
package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/obs"
)

// Largest response buffer kept for another request.
const maxPooledBuffer = 4 << 20

// Request is a GraphQL request (GraphQL over HTTP).
type Request struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
	Extensions    map[string]any `json:"extensions"`
	// VariablesJSON is the variables object as sent, when the transport
	// has it (the library's variable validation reads JSON).
	VariablesJSON []byte `json:"-"`
}

// Error is one GraphQL error.
type Error struct {
	Message    string         `json:"message"`
	Locations  []Location     `json:"locations,omitempty"`
	Path       []any          `json:"path,omitempty"`
	Extensions map[string]any `json:"extensions,omitempty"`
}

// Result is an executed (or refused) request.
type Result struct {
	// Data is the raw "data" member; nil when the request failed before
	// execution (then there is no data member at all).
	Data   []byte
	Errors []Error
	// RequestError marks errors raised before execution (syntax,
	// validation, variables, limits): HTTP 400 under
	// application/graphql-response+json.
	RequestError bool
	// body is the whole response, {"data":Data}, when Written wrapped it
	// around Data (Data is a slice of it) and there are no errors:
	// MarshalJSON returns it rather than copying Data once more.
	body []byte
	// buf holds body and Data, from pool; Release hands it back.
	buf  *bytes.Buffer
	pool *sync.Pool
}

// Written is the result of an execution written into buf (taken from
// pool): buf holds {"data":<data>} with data written after DataPrefix.
// errs are the field errors; nullData (a non-null root field failed) makes
// the data null. A result without errors is sent as buf holds it.
func Written(buf *bytes.Buffer, pool *sync.Pool, errs []Error, nullData bool) *Result {
	full := buf.Bytes()
	res := &Result{Data: full[len(DataPrefix) : len(full)-1], Errors: errs, buf: buf, pool: pool}
	switch {
	case nullData:
		res.Data = []byte("null")
	case len(errs) == 0:
		res.body = full
	}
	return res
}

// Release hands the buffer r was written into back to the engine for
// another request: r (its Data and what MarshalJSON returned) must not be
// used after.
func (r *Result) Release() {
	if r.buf != nil && r.buf.Cap() <= maxPooledBuffer {
		r.pool.Put(r.buf)
	}
	r.buf, r.body, r.Data = nil, nil, nil
}

// MarshalJSON renders {"errors": [...], "data": ...}.
func (r *Result) MarshalJSON() ([]byte, error) {
	if r.body != nil && len(r.Errors) == 0 && len(r.body) == len(DataPrefix)+len(r.Data)+1 &&
		len(r.Data) > 0 && &r.body[len(DataPrefix)] == &r.Data[0] {
		return r.body, nil
	}
	var b bytes.Buffer
	b.Grow(len(r.Data) + len(DataPrefix) + 1)
	b.WriteByte('{')
	if len(r.Errors) > 0 {
		b.WriteString(`"errors":`)
		e, err := json.Marshal(r.Errors)
		if err != nil {
			return nil, err
		}
		b.Write(e)
	}
	if r.Data != nil {
		if len(r.Errors) > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"data":`)
		b.Write(r.Data)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// NewRequestError is a request error (raised before execution) of code.
func NewRequestError(code apperr.Code, msg string) *Result {
	return &Result{RequestError: true, Errors: []Error{{Message: msg, Extensions: map[string]any{"code": string(code)}}}}
}

// ErrorResult is a request error carrying err's code and message; an
// internal error is logged with the request and shows only "internal error",
// as api.WriteError does for REST.
func ErrorResult(ctx context.Context, err error) *Result {
	ae := db.Classify(err)
	if ae.Code == apperr.Internal || ae.Code == apperr.Unavailable {
		obs.LoggerFrom(ctx).Error("graphql request failed", "code", ae.Code, "err", ae)
		return NewRequestError(ae.Code, "internal error")
	}
	return NewRequestError(ae.Code, ae.Message)
}

// DataPrefix starts a response holding data and no errors.
const DataPrefix = `{"data":`

// Location is a position in the query document (1-based).
type Location struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// ValidationFailed is a request error of one validation error e.
func ValidationFailed(e Error) *Result {
	e.Extensions = map[string]any{"code": "GRAPHQL_VALIDATION_FAILED"}
	return &Result{RequestError: true, Errors: []Error{e}}
}
