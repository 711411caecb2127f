// Package connectapi serves the Connect (connectrpc.com) API of DDS:
// dds.v1.RecordService (record CRUD and list over records.Store, records as
// google.protobuf.Struct) and dds.v1.SchemaService (read-only schemas). The
// handlers are mounted on the api.Router, so they are authenticated with the
// same bearer credentials and rate-limited like REST; each call checks its
// scope. Errors are apperr values until one interceptor maps them to Connect
// codes (connectError).
package connectapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/obs"
	ddsv1 "github.com/dds-project/dds/proto/gen/dds/v1"
	"github.com/dds-project/dds/proto/gen/dds/v1/ddsv1connect"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// Handler serves the Connect services.
type Handler struct {
	store   *records.Store
	schemas *schema.Service
	errw    *connect.ErrorWriter
}

// New returns the Connect handler.
func New(store *records.Store, schemas *schema.Service) *Handler {
	return &Handler{store: store, schemas: schemas, errw: connect.NewErrorWriter()}
}

// Routes mounts both services on the authenticated router. Credential and
// tenant rate-limit failures are rendered in the caller's protocol
// (Connect, gRPC or gRPC-Web), like every other error of these services.
func (h *Handler) Routes(r *api.Router) {
	opts := connect.WithInterceptors(errorInterceptor{})
	path, rh := ddsv1connect.NewRecordServiceHandler(recordService{h}, opts)
	r.HandleRendering(path, rh, h.writeError)
	path, sh := ddsv1connect.NewSchemaServiceHandler(schemaService{h}, opts)
	r.HandleRendering(path, sh, h.writeError)
	// gRPC server reflection, so grpcurl and `buf curl` work without the
	// .proto files. Public: it describes the services, which are public.
	reflector := grpcreflect.NewStaticReflector(ddsv1connect.RecordServiceName, ddsv1connect.SchemaServiceName)
	r.Public(grpcreflect.NewHandlerV1(reflector))
	r.Public(grpcreflect.NewHandlerV1Alpha(reflector))
}

// writeError renders an error raised before a call reaches its handler.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if !h.errw.IsSupported(r) {
		api.WriteError(w, r, err)
		return
	}
	_ = h.errw.Write(w, r, connectError(r.Context(), err))
}

// principal returns the caller authenticated by the router.
func principal(ctx context.Context) (*auth.Principal, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return nil, apperr.New(apperr.Unauthenticated, "missing credentials")
	}
	return p, nil
}

// scope authorises op on entity and resolves the caller's active schema.
func (h *Handler) scope(ctx context.Context, entity, op string) (*records.Scope, error) {
	if entity == "" {
		return nil, apperr.Field("entity", "is required")
	}
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.Require("entity", entity, op); err != nil {
		return nil, err
	}
	sc, err := h.store.Scope(ctx, p)
	if err != nil {
		return nil, err
	}
	if _, err := sc.Entity(entity); err != nil {
		return nil, err
	}
	return sc, nil
}

// --- RecordService -------------------------------------------------------

type recordService struct{ h *Handler }

var _ ddsv1connect.RecordServiceHandler = recordService{}

func (s recordService) Get(ctx context.Context, req *connect.Request[ddsv1.GetRequest]) (*connect.Response[ddsv1.GetResponse], error) {
	m := req.Msg
	sc, err := s.h.scope(ctx, m.Entity, "read")
	if err != nil {
		return nil, err
	}
	raw, err := s.h.store.Get(ctx, sc, m.Entity, m.Id, query.Selection{Fields: selection(m.Select)})
	if err != nil {
		return nil, err
	}
	rec, err := toStruct(raw)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&ddsv1.GetResponse{Record: rec}), nil
}

func (s recordService) List(ctx context.Context, req *connect.Request[ddsv1.ListRequest]) (*connect.Response[ddsv1.ListResponse], error) {
	m := req.Msg
	sc, err := s.h.scope(ctx, m.Entity, "read")
	if err != nil {
		return nil, err
	}
	l := query.List{Entity: m.Entity, Search: m.Search, Select: query.Selection{Fields: selection(m.Select)},
		Limit: int(m.Limit), Offset: int(m.Offset), IncludeCount: m.IncludeCount}
	if m.Limit < 0 {
		return nil, apperr.Field("limit", "must not be negative")
	}
	if m.Offset < 0 {
		return nil, apperr.Field("offset", "must not be negative")
	}
	if m.Where != nil {
		if l.Where, err = query.ParseWhere(m.Where.AsMap()); err != nil {
			return nil, err
		}
	}
	if m.OrderBy != "" {
		l.OrderBy = []query.Order{{Field: m.OrderBy, Desc: m.OrderDirection == ddsv1.OrderDirection_ORDER_DIRECTION_DESC}}
	} else if m.OrderDirection != ddsv1.OrderDirection_ORDER_DIRECTION_UNSPECIFIED {
		return nil, apperr.Field("orderDirection", "needs orderBy")
	}
	raw, err := s.h.store.Query(ctx, sc, l)
	if err != nil {
		return nil, err
	}
	var out ddsv1.ListResponse
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, &out); err != nil {
		return nil, apperr.Wrap(err, "convert records")
	}
	if !m.IncludeCount {
		out.Count = nil
	}
	return connect.NewResponse(&out), nil
}

func (s recordService) Create(ctx context.Context, req *connect.Request[ddsv1.CreateRequest]) (*connect.Response[ddsv1.CreateResponse], error) {
	m := req.Msg
	sc, err := s.h.scope(ctx, m.Entity, "create")
	if err != nil {
		return nil, err
	}
	raw, err := s.h.store.Create(ctx, sc, m.Entity, m.Record.AsMap())
	if err != nil {
		return nil, err
	}
	rec, err := toStruct(raw)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&ddsv1.CreateResponse{Record: rec}), nil
}

func (s recordService) Update(ctx context.Context, req *connect.Request[ddsv1.UpdateRequest]) (*connect.Response[ddsv1.UpdateResponse], error) {
	m := req.Msg
	sc, err := s.h.scope(ctx, m.Entity, "update")
	if err != nil {
		return nil, err
	}
	mode := records.Patch
	if m.Replace {
		mode = records.Replace
	}
	raw, err := s.h.store.Update(ctx, sc, m.Entity, m.Id, m.Record.AsMap(), mode)
	if err != nil {
		return nil, err
	}
	rec, err := toStruct(raw)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&ddsv1.UpdateResponse{Record: rec}), nil
}

func (s recordService) Delete(ctx context.Context, req *connect.Request[ddsv1.DeleteRequest]) (*connect.Response[ddsv1.DeleteResponse], error) {
	m := req.Msg
	sc, err := s.h.scope(ctx, m.Entity, "delete")
	if err != nil {
		return nil, err
	}
	if err := s.h.store.Delete(ctx, sc, m.Entity, m.Id); err != nil {
		return nil, err
	}
	return connect.NewResponse(&ddsv1.DeleteResponse{Id: m.Id}), nil
}

// selection maps an empty select to "every field".
func selection(fields []string) []string {
	if len(fields) == 0 {
		return nil
	}
	return fields
}

// toStruct converts a record Postgres rendered as JSON.
func toStruct(raw json.RawMessage) (*structpb.Struct, error) {
	var s structpb.Struct
	if err := protojson.Unmarshal(raw, &s); err != nil {
		return nil, apperr.Wrap(err, "convert record")
	}
	return &s, nil
}

// --- SchemaService -------------------------------------------------------

type schemaService struct{ h *Handler }

var _ ddsv1connect.SchemaServiceHandler = schemaService{}

func (s schemaService) caller(ctx context.Context) (*auth.Principal, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.Require("schema", "*", "read"); err != nil {
		return nil, err
	}
	return p, nil
}

func (s schemaService) ListSchemas(ctx context.Context, _ *connect.Request[ddsv1.ListSchemasRequest]) (*connect.Response[ddsv1.ListSchemasResponse], error) {
	p, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	list, err := s.h.schemas.List(ctx, p.TenantID)
	if err != nil {
		return nil, err
	}
	out := &ddsv1.ListSchemasResponse{Schemas: make([]*ddsv1.Schema, 0, len(list))}
	for _, info := range list {
		sm, err := schemaMessage(info)
		if err != nil {
			return nil, err
		}
		out.Schemas = append(out.Schemas, sm)
	}
	return connect.NewResponse(out), nil
}

func (s schemaService) GetSchema(ctx context.Context, req *connect.Request[ddsv1.GetSchemaRequest]) (*connect.Response[ddsv1.GetSchemaResponse], error) {
	p, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	if req.Msg.Id == "" {
		return nil, apperr.Field("id", "is required")
	}
	info, err := s.h.schemas.Get(ctx, p.TenantID, req.Msg.Id)
	if err != nil {
		return nil, err
	}
	sm, err := schemaMessage(info)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&ddsv1.GetSchemaResponse{Schema: sm}), nil
}

func schemaMessage(info schema.Info) (*ddsv1.Schema, error) {
	raw, err := json.Marshal(info.Definition)
	if err != nil {
		return nil, apperr.Wrap(err, "encode schema definition")
	}
	def, err := toStruct(raw)
	if err != nil {
		return nil, err
	}
	return &ddsv1.Schema{Id: info.ID, Name: info.Name, Version: int32(info.Version), Active: info.Active,
		CreatedAt: timestamppb.New(info.CreatedAt), UpdatedAt: timestamppb.New(info.UpdatedAt), Definition: def}, nil
}

// --- errors --------------------------------------------------------------

// ErrorCodeHeader is the response metadata carrying the DDS error code
// (VALIDATION_ERROR, NOT_FOUND, ...), which is finer than the Connect code.
const ErrorCodeHeader = "Dds-Error-Code"

// errorInterceptor turns every error a handler returns into a Connect error.
type errorInterceptor struct{}

func (errorInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		res, err := next(ctx, req)
		if err != nil {
			return nil, connectError(ctx, err)
		}
		return res, nil
	}
}

func (errorInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (errorInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		if err := next(ctx, conn); err != nil {
			return connectError(ctx, err)
		}
		return nil
	}
}

// Code maps a DDS error code to its Connect code; the one place this
// mapping is made.
func Code(c apperr.Code) connect.Code {
	switch c {
	case apperr.Validation, apperr.BadRequest, apperr.QueryTooExpensive:
		return connect.CodeInvalidArgument
	case apperr.QueryTimeout:
		return connect.CodeDeadlineExceeded
	case apperr.IdempotencyKeyReused:
		return connect.CodeFailedPrecondition
	case apperr.Unauthenticated:
		return connect.CodeUnauthenticated
	case apperr.Forbidden:
		return connect.CodePermissionDenied
	case apperr.NotFound:
		return connect.CodeNotFound
	case apperr.Conflict:
		return connect.CodeAlreadyExists
	case apperr.TooLarge, apperr.RateLimited:
		return connect.CodeResourceExhausted
	case apperr.Unavailable:
		return connect.CodeUnavailable
	}
	return connect.CodeInternal
}

// connectError renders err as a Connect error: the code, the public
// message, field errors as a google.rpc.BadRequest detail, and the DDS code
// in the Dds-Error-Code metadata. Internal causes are logged, never sent.
func connectError(ctx context.Context, err error) error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce // raised by connect itself (malformed request, codec)
	}
	e := db.Classify(err)
	msg := e.Message
	if e.Code == apperr.Internal || e.Code == apperr.Unavailable {
		obs.LoggerFrom(ctx).Error("connect call failed", "code", e.Code, "err", e)
		msg = "internal error; quote the X-Request-Id when reporting it"
	}
	out := connect.NewError(Code(e.Code), errors.New(msg))
	if len(e.Details) > 0 {
		br := &errdetails.BadRequest{}
		for _, d := range e.Details {
			br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: d.Field, Description: d.Message})
		}
		if detail, derr := connect.NewErrorDetail(br); derr == nil {
			out.AddDetail(detail)
		}
	}
	out.Meta().Set(ErrorCodeHeader, string(e.Code))
	api.SetRetryAfter(out.Meta(), e)
	return out
}
