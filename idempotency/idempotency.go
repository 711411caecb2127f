// Package idempotency owns dds.idempotency_keys: the answers of writes
// sent with an Idempotency-Key header, kept 24 hours, so that a client
// retrying a write whose answer it never received gets the first answer and
// nothing is written twice. The key's commit is marked inside the write's
// own transaction (records.WithCommitHook), so after a lost answer the row
// tells whether the write committed. See docs/rest.md, "Retries".
package idempotency

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/records"
)

// TTL is how long an answer is kept; Lease how long a first request may
// run before a retry may take its key over (when it did not commit).
const (
	TTL   = 24 * time.Hour
	Lease = time.Minute
)

// Store is the table of keys.
type Store struct{ db *sqlx.DB }

// NewStore returns the store over db.
func NewStore(db *sqlx.DB) *Store { return &Store{db: db} }

// State is what Begin found.
type State int

const (
	// Fresh: the key is this request's; run it, then Finish (or Abandon).
	Fresh State = iota
	// Replay: the first answer is in Answer.
	Replay
	// InFlight: the first request with this key is still running.
	InFlight
	// Reused: the key was used with another method, path or body.
	Reused
	// CommittedUnanswered: the first request's write committed but its
	// answer was never recorded (the server stopped between the two).
	CommittedUnanswered
)

// Answer is a recorded response.
type Answer struct {
	Status      int
	ContentType string
	Body        []byte
}

// Hash is the request's fingerprint: method, path with query, and body.
func Hash(method, path string, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(method + " " + path + "\n"))
	h.Write(body)
	return h.Sum(nil)
}

// Begin claims key for a request with hash, or says why not.
func (s *Store) Begin(ctx context.Context, tenant, key string, hash []byte) (State, *Answer, error) {
	for range 3 { // a row that expires or whose lease ends meanwhile is claimed on the next pass
		res, err := s.db.ExecContext(ctx, `INSERT INTO dds.idempotency_keys (tenant_id, key, request_hash, lease_until, expires_at)
			VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond', now() + $5 * interval '1 millisecond')
			ON CONFLICT (tenant_id, key) DO UPDATE SET request_hash = excluded.request_hash, committed = false,
				lease_until = excluded.lease_until, status = NULL, content_type = NULL, body = NULL,
				created_at = now(), expires_at = excluded.expires_at
			WHERE dds.idempotency_keys.expires_at < now()`, tenant, key, hash, Lease.Milliseconds(), TTL.Milliseconds())
		if err != nil {
			return 0, nil, err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return Fresh, nil, nil
		}
		var row struct {
			Hash        []byte         `db:"request_hash"`
			Committed   bool           `db:"committed"`
			Leased      bool           `db:"leased"`
			Status      sql.NullInt32  `db:"status"`
			ContentType sql.NullString `db:"content_type"`
			Body        []byte         `db:"body"`
		}
		err = s.db.GetContext(ctx, &row, `SELECT request_hash, committed, coalesce(lease_until > now(), false) AS leased, status, content_type, body
			FROM dds.idempotency_keys WHERE tenant_id = $1 AND key = $2 AND expires_at >= now()`, tenant, key)
		if errors.Is(err, sql.ErrNoRows) {
			continue // expired between the two statements
		}
		if err != nil {
			return 0, nil, err
		}
		switch {
		case string(row.Hash) != string(hash):
			return Reused, nil, nil
		case row.Status.Valid:
			return Replay, &Answer{Status: int(row.Status.Int32), ContentType: row.ContentType.String, Body: row.Body}, nil
		case row.Committed:
			return CommittedUnanswered, nil, nil
		case row.Leased:
			return InFlight, nil, nil
		}
		// The first request stopped before committing and its lease ended:
		// nothing was written; this request takes the key over.
		res, err = s.db.ExecContext(ctx, `UPDATE dds.idempotency_keys SET lease_until = now() + $3 * interval '1 millisecond'
			WHERE tenant_id = $1 AND key = $2 AND NOT committed AND status IS NULL AND lease_until <= now()`, tenant, key, Lease.Milliseconds())
		if err != nil {
			return 0, nil, err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return Fresh, nil, nil
		}
	}
	return InFlight, nil, nil
}

// Guard returns ctx under which records marks key committed in the
// transaction of every write it makes.
func (s *Store) Guard(ctx context.Context, tenant, key string) context.Context {
	return records.WithCommitHook(ctx, func(ctx context.Context, tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE dds.idempotency_keys SET committed = true WHERE tenant_id = $1 AND key = $2`, tenant, key)
		return err
	})
}

// Finish records the answer of the request that holds key. An answer of
// 500 or more whose write did not commit is not kept: the key is released,
// so a retry runs the request again (nothing was written).
func (s *Store) Finish(ctx context.Context, tenant, key string, a Answer) error {
	if a.Status >= 500 {
		res, err := s.db.ExecContext(ctx, `DELETE FROM dds.idempotency_keys WHERE tenant_id = $1 AND key = $2 AND NOT committed`, tenant, key)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return nil // released: nothing was written, so there is no answer to keep
		}
	}
	_, err := s.db.ExecContext(ctx, `UPDATE dds.idempotency_keys SET status = $3, content_type = $4, body = $5, lease_until = NULL
		WHERE tenant_id = $1 AND key = $2`, tenant, key, a.Status, a.ContentType, a.Body)
	return err
}

// Prune deletes expired keys; it returns how many.
func (s *Store) Prune(ctx context.Context) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM dds.idempotency_keys WHERE expires_at < now()`)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
