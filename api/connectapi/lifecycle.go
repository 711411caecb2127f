package connectapi

import (
	"context"
	"encoding/json"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/dds-project/dds/apperr"
	ddsv1 "github.com/dds-project/dds/proto/gen/dds/v1"
)

// The RPCs of the entity options history and softDelete: History,
// GetVersion and Restore answer as REST's .../history and .../restore do
// (records.Store.History, Version and Restore, with the same scopes and
// rules), in protobuf form.

func (s recordService) History(ctx context.Context, req *connect.Request[ddsv1.HistoryRequest]) (*connect.Response[ddsv1.HistoryResponse], error) {
	m := req.Msg
	sc, err := s.h.scope(ctx, m.Entity, "read")
	if err != nil {
		return nil, err
	}
	raw, err := s.h.store.History(ctx, sc, m.Entity, m.Id, int(m.Limit), m.Cursor)
	if err != nil {
		return nil, err
	}
	var page struct {
		Items      []json.RawMessage `json:"items"`
		NextCursor string            `json:"nextCursor"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, apperr.Wrap(err, "decode history page")
	}
	out := &ddsv1.HistoryResponse{Items: make([]*ddsv1.Version, 0, len(page.Items)), NextCursor: page.NextCursor}
	for _, it := range page.Items {
		v, err := versionMessage(it)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, v)
	}
	return connect.NewResponse(out), nil
}

func (s recordService) GetVersion(ctx context.Context, req *connect.Request[ddsv1.GetVersionRequest]) (*connect.Response[ddsv1.GetVersionResponse], error) {
	m := req.Msg
	sc, err := s.h.scope(ctx, m.Entity, "read")
	if err != nil {
		return nil, err
	}
	if m.VersionId == "" {
		return nil, apperr.Field("versionId", "is required")
	}
	raw, err := s.h.store.Version(ctx, sc, m.Entity, m.Id, m.VersionId)
	if err != nil {
		return nil, err
	}
	v, err := versionMessage(raw)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&ddsv1.GetVersionResponse{Version: v}), nil
}

func (s recordService) Restore(ctx context.Context, req *connect.Request[ddsv1.RestoreRequest]) (*connect.Response[ddsv1.RestoreResponse], error) {
	m := req.Msg
	sc, err := s.h.scope(ctx, m.Entity, "delete")
	if err != nil {
		return nil, err
	}
	raw, err := s.h.store.Restore(ctx, sc, m.Entity, m.Id)
	if err != nil {
		return nil, err
	}
	rec, err := toStruct(raw)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&ddsv1.RestoreResponse{Record: rec}), nil
}

// versionMessage converts a version as records renders it.
func versionMessage(raw json.RawMessage) (*ddsv1.Version, error) {
	var v struct {
		ID      string          `json:"id"`
		Op      string          `json:"op"`
		At      string          `json:"at"`
		KeyID   *string         `json:"keyId"`
		UserID  *string         `json:"userId"`
		Changed []string        `json:"changed"`
		Record  json.RawMessage `json:"record"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, apperr.Wrap(err, "decode version")
	}
	at, err := time.Parse(time.RFC3339Nano, v.At)
	if err != nil {
		return nil, apperr.Wrap(err, "decode version time")
	}
	rec, err := toStruct(v.Record)
	if err != nil {
		return nil, err
	}
	out := &ddsv1.Version{Id: v.ID, Op: v.Op, At: timestamppb.New(at), Changed: v.Changed, Record: rec}
	if v.KeyID != nil {
		out.KeyId = *v.KeyID
	}
	if v.UserID != nil {
		out.UserId = *v.UserID
	}
	return out, nil
}
