package auth

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/dds-project/dds/apperr"
)

// MaxTokenTTL bounds access-token lifetimes.
const MaxTokenTTL = 24 * time.Hour

// Authenticator resolves bearer credentials. Valid keys are cached by hash;
// a revocation (NOTIFY dds_keys) drops the key's entry on every replica at
// once. lastUsed is kept in memory and flushed in batches, so a request
// never writes.
//
// Revocation wins every race with a key's first use: a lookup that finds a
// key valid caches it only if no revocation (Revoked, Flush) was seen since
// the lookup began (gen, read before the query and compared under the lock
// that fills the cache). Otherwise a read that began before a revocation and
// ended after it would put the revoked key back for the cache's whole TTL.
type Authenticator struct {
	db     *sqlx.DB
	env    string
	secret []byte
	ttl    time.Duration
	log    *slog.Logger

	mu    sync.RWMutex
	gen   uint64               // revocations seen (Revoked, Flush); under mu
	keys  map[string]cachedKey // key id -> key
	index map[[32]byte]string  // SHA-256 of the key -> key id

	// afterLookup, when set (tests only), runs between a lookup's read and
	// its caching: the window a revocation can race.
	afterLookup func()

	tokens    *verifiedTokens // DDS-issued tokens already verified (tokencache.go)
	roles     RoleSource      // nil: no roles (role-bound keys and user tokens refused)
	providers TokenVerifier   // nil: no identity providers

	usedMu sync.Mutex
	used   map[string]time.Time

	watchMu  sync.Mutex
	watchers map[string]map[*watcher]struct{} // key id -> who holds a connection on it
}

// watcher is a long-lived use of a key (a subscription socket) that must
// end when the key is revoked.
type watcher struct{ revoked func() }

// cachedKey is a valid key: p is its principal without its role; role is
// the role it is bound to ("" for none), resolved on every use (package
// roles keeps the roles cached and current), so a role's change applies to
// its keys at once.
type cachedKey struct {
	p    *Principal
	role string
	at   time.Time
}

// Option configures an Authenticator.
type Option func(*Authenticator)

// WithRoles resolves roles (of user tokens, provider tokens and role-bound
// keys) through rs.
func WithRoles(rs RoleSource) Option { return func(a *Authenticator) { a.roles = rs } }

// WithProviders verifies bearer JWTs that DDS did not issue through v (the
// tenants' identity providers).
func WithProviders(v TokenVerifier) Option { return func(a *Authenticator) { a.providers = v } }

// NewAuthenticator builds an authenticator for the deployment's key env.
func NewAuthenticator(db *sqlx.DB, env string, jwtSecret []byte, cacheTTL time.Duration, log *slog.Logger, opts ...Option) *Authenticator {
	a := &Authenticator{db: db, env: env, secret: jwtSecret, ttl: cacheTTL, log: log,
		keys: map[string]cachedKey{}, index: map[[32]byte]string{}, used: map[string]time.Time{},
		watchers: map[string]map[*watcher]struct{}{}, tokens: newVerifiedTokens()}
	for _, o := range opts {
		o(a)
	}
	return a
}

var errUnauthenticated = apperr.New(apperr.Unauthenticated, "missing or invalid credentials")

// Authenticate resolves "Bearer <key or token>" to a principal.
func (a *Authenticator) Authenticate(ctx context.Context, header string) (*Principal, error) {
	cred, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || cred == "" {
		return nil, apperr.New(apperr.Unauthenticated, "missing Authorization: Bearer <API key or access token>")
	}
	cred = strings.TrimSpace(cred)
	if strings.HasPrefix(cred, keyPrefix) {
		return a.authenticateKey(ctx, cred)
	}
	return a.authenticateToken(ctx, cred)
}

func (a *Authenticator) authenticateKey(ctx context.Context, key string) (*Principal, error) {
	env, ok := KeyEnv(key)
	if !ok {
		return nil, errUnauthenticated
	}
	if env != a.env {
		return nil, apperr.New(apperr.Unauthenticated, "this API key belongs to the %q environment; this deployment accepts %q keys", env, a.env)
	}
	h := sha256.Sum256([]byte(key)) // HashKey, without copying it to the heap on every request
	a.mu.RLock()
	id, hit := a.index[h]
	k := a.keys[id]
	gen := a.gen
	a.mu.RUnlock()
	if hit && k.p != nil && time.Since(k.at) < a.ttl {
		a.touch(id)
		if k.role != "" {
			return a.bindRole(ctx, k.p, k.role)
		}
		return k.p, nil
	}
	var row struct {
		ID       string         `db:"id"`
		TenantID string         `db:"tenant_id"`
		Scopes   pq.StringArray `db:"scopes"`
		Role     sql.NullString `db:"role"`
	}
	err := a.db.GetContext(ctx, &row, liveKeyByHash, h[:])
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errUnauthenticated
	}
	if err != nil {
		return nil, apperr.Wrap(err, "authentication failed")
	}
	scopes, err := ParseScopes(row.Scopes)
	if err != nil {
		return nil, apperr.Wrap(err, "stored scopes are invalid")
	}
	p := &Principal{TenantID: row.TenantID, KeyID: row.ID, Scopes: scopes}
	if a.afterLookup != nil {
		a.afterLookup()
	}
	a.mu.Lock()
	if a.gen == gen { // no revocation since the read began (see Authenticator)
		a.keys[row.ID] = cachedKey{p: p, role: row.Role.String, at: time.Now()}
		a.index[h] = row.ID
	}
	a.mu.Unlock()
	a.touch(row.ID)
	if row.Role.Valid {
		return a.bindRole(ctx, p, row.Role.String)
	}
	return p, nil
}

// keyValid reports whether the key that minted a token is still valid.
func (a *Authenticator) keyValid(ctx context.Context, keyID string) (bool, error) {
	a.mu.RLock()
	k, hit := a.keys[keyID]
	gen := a.gen
	a.mu.RUnlock()
	if hit && time.Since(k.at) < a.ttl {
		return true, nil
	}
	var ok bool
	err := a.db.GetContext(ctx, &ok, liveKeyByID, keyID)
	if err != nil {
		return false, apperr.Wrap(err, "authentication failed")
	}
	if a.afterLookup != nil {
		a.afterLookup()
	}
	if ok {
		a.mu.Lock()
		if _, present := a.keys[keyID]; !present && a.gen == gen {
			a.keys[keyID] = cachedKey{at: time.Now()}
		}
		a.mu.Unlock()
	}
	return ok, nil
}

// Revoked drops a key (and so the tokens it minted) from the cache; wired to
// NOTIFY dds_keys.
func (a *Authenticator) Revoked(keyID string) {
	a.mu.Lock()
	a.gen++
	delete(a.keys, keyID)
	for h, id := range a.index {
		if id == keyID {
			delete(a.index, h)
		}
	}
	a.mu.Unlock()
	a.notifyRevoked(keyID)
}

// Flush drops every cached key (after a missed-notification window), and
// checks again the keys of every watcher, since a revocation may have been
// missed.
func (a *Authenticator) Flush() {
	a.mu.Lock()
	a.gen++
	a.keys = map[string]cachedKey{}
	a.index = map[[32]byte]string{}
	a.mu.Unlock()
	a.watchMu.Lock()
	ids := make([]string, 0, len(a.watchers))
	for id := range a.watchers {
		ids = append(ids, id)
	}
	a.watchMu.Unlock()
	if len(ids) > 0 {
		go a.recheck(ids)
	}
}

// recheck ends the watchers of those of ids that are no longer valid.
func (a *Authenticator) recheck(ids []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, id := range ids {
		if ok, err := a.keyValid(ctx, id); err == nil && !ok {
			a.notifyRevoked(id)
		}
	}
}

// Watch calls revoked once when key keyID is revoked (on this server or,
// through NOTIFY dds_keys, on any other), until stop is called: a
// subscription socket holds its connection open with it, and must end it
// with the key. revoked runs on the revoking goroutine and must not block.
func (a *Authenticator) Watch(keyID string, revoked func()) (stop func()) {
	w := &watcher{revoked: revoked}
	a.watchMu.Lock()
	if a.watchers[keyID] == nil {
		a.watchers[keyID] = map[*watcher]struct{}{}
	}
	a.watchers[keyID][w] = struct{}{}
	a.watchMu.Unlock()
	return func() {
		a.watchMu.Lock()
		delete(a.watchers[keyID], w)
		if len(a.watchers[keyID]) == 0 {
			delete(a.watchers, keyID)
		}
		a.watchMu.Unlock()
	}
}

// notifyRevoked calls and drops the watchers of key keyID.
func (a *Authenticator) notifyRevoked(keyID string) {
	a.watchMu.Lock()
	ws := a.watchers[keyID]
	delete(a.watchers, keyID)
	a.watchMu.Unlock()
	for w := range ws {
		w.revoked()
	}
}

func (a *Authenticator) touch(keyID string) {
	a.usedMu.Lock()
	a.used[keyID] = time.Now()
	a.usedMu.Unlock()
}

// FlushLastUsed writes the lastUsed times gathered since the last call in one
// statement.
func (a *Authenticator) FlushLastUsed(ctx context.Context) error {
	a.usedMu.Lock()
	used := a.used
	a.used = map[string]time.Time{}
	a.usedMu.Unlock()
	if len(used) == 0 {
		return nil
	}
	ids := make([]string, 0, len(used))
	times := make([]time.Time, 0, len(used))
	for id, t := range used {
		ids = append(ids, id)
		times = append(times, t)
	}
	_, err := a.db.ExecContext(ctx, `UPDATE dds.api_keys k SET last_used = u.t
		FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, t)
		WHERE k.id = u.id AND (k.last_used IS NULL OR k.last_used < u.t)`, ids, times)
	return err
}

// Run flushes lastUsed every interval until ctx ends (and once more then).
func (a *Authenticator) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := a.FlushLastUsed(fctx); err != nil {
				a.log.Warn("flush lastUsed", "err", err)
			}
			cancel()
			return
		case <-t.C:
			if err := a.FlushLastUsed(ctx); err != nil {
				a.log.Warn("flush lastUsed", "err", err)
			}
		}
	}
}

// tokenClaims are the claims of the JWTs DDS issues (iss "dds", aud the
// key env, HS256 with DDS_JWT_SECRET). An access token has no "typ" and its
// sub is the tenant; a user token has typ "user", sub the user id, tid the
// tenant, roles and claims (usertoken.go).
type tokenClaims struct {
	Scopes []string       `json:"scp,omitempty"`
	KeyID  string         `json:"kid"`
	Type   string         `json:"typ,omitempty"`
	Tenant string         `json:"tid,omitempty"`
	Roles  []string       `json:"roles,omitempty"`
	Claims map[string]any `json:"claims,omitempty"`
	jwt.RegisteredClaims
}

// Mint issues an access token for p narrowed to scopes, valid for ttl.
// A user's token or a role-bound key cannot mint access tokens: the token
// would carry neither the user nor the role, and so escape the rules.
func (a *Authenticator) Mint(p *Principal, scopes Scopes, ttl time.Duration) (string, time.Time, error) {
	if p.UserID != "" || len(p.Roles) > 0 || p.KeyID == "" {
		return "", time.Time{}, apperr.New(apperr.Forbidden, "only an API key without a role (or an access token it minted) may mint access tokens")
	}
	if !p.Scopes.Covers(scopes) {
		return "", time.Time{}, apperr.Field("scopes", "a token cannot have scopes its key lacks")
	}
	if ttl <= 0 || ttl > MaxTokenTTL {
		return "", time.Time{}, apperr.Field("expiresIn", "must be between 1 and %d seconds", int(MaxTokenTTL.Seconds()))
	}
	now := time.Now()
	exp := now.Add(ttl)
	claims := tokenClaims{Scopes: scopes.Strings(), KeyID: p.KeyID, RegisteredClaims: jwt.RegisteredClaims{
		Issuer: "dds", Subject: p.TenantID, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(exp),
		ID: uuid.NewString(), Audience: jwt.ClaimStrings{a.env},
	}}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(a.secret)
	if err != nil {
		return "", time.Time{}, apperr.Wrap(err, "sign token")
	}
	return s, exp, nil
}

func (a *Authenticator) authenticateToken(ctx context.Context, raw string) (*Principal, error) {
	t, hit := a.tokens.get(raw) // verified before: DDS issued it
	switch {
	case hit && !t.live(time.Now()):
		return nil, errUnauthenticated
	case hit:
	case a.providers != nil && !issuedByDDS(raw):
		return a.authenticateProviderToken(ctx, raw)
	default:
		var err error
		if t, err = a.verifyDDSToken(raw); err != nil {
			return nil, err
		}
	}
	c := &t.claims
	switch c.Type {
	case "":
	case userTokenType:
		return a.authenticateUserToken(ctx, c)
	default:
		return nil, errUnauthenticated
	}
	scopes := t.scopes
	ok, err := a.keyValid(ctx, c.KeyID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apperr.New(apperr.Unauthenticated, "the API key that issued this token was revoked")
	}
	return &Principal{TenantID: c.Subject, KeyID: c.KeyID, Scopes: scopes, Token: true, Expires: c.ExpiresAt.Time}, nil
}
