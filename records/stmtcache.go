package records

import "sync"

// stmtCache keeps SQL text per schema version for the hot paths (get by id,
// create, an unfiltered vector search) whose text depends only on the
// entity and the fields present, so a request binds values to text built
// once. It lives on the schema version (schema.Active.Memo), so a schema
// change starts a fresh cache. Bounded: past maxCached texts, statements
// are built per call.
//
// Invariant: a cached text is keyed by everything its SQL depends on. The
// schema version and the compiler's settings (ef_search, which decides
// whether a vector search needs its SET LOCAL setup) choose the cache
// (Scope.stmts); the principal's rule inputs (Scope.ruleKey, "" until row
// rules exist) choose it too; the entry's key names the plan (entity,
// fields, and whatever else of the plan the text is built from). A new
// input of the SQL must join one of them.
type stmtCache struct {
	mu sync.RWMutex
	m  map[string]string
	// params are the rule variables' params of a statement in m whose
	// first value is supplied per call (getParams).
	params map[string][]any
	// tails are the values every create of an entity binds after its
	// fields (outbox.InsertCTE's five), boxed once per schema version.
	tails map[string][]any
}

const maxCached = 1024

// stmts is the cache of the scope's schema version, compiler settings and
// rule inputs.
func (sc *Scope) stmts() *stmtCache {
	key := sc.stmtKey
	if r := sc.ruleKey(); r != "" {
		key += "\x00" + r
	}
	return sc.Schema.Memo(key, func() any {
		return &stmtCache{m: map[string]string{}, params: map[string][]any{}, tails: map[string][]any{}}
	}).(*stmtCache)
}

// lookup is get for a key being built in a buffer (the map lookup does not
// copy it into a string).
func (c *stmtCache) lookup(key []byte) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.m[string(key)]
	return s, ok
}

// tail returns the values bound after the fields of entity's creates,
// building them once.
func (c *stmtCache) tail(entity string, build func() []any) []any {
	c.mu.RLock()
	t, ok := c.tails[entity]
	c.mu.RUnlock()
	if ok {
		return t
	}
	t = build()
	c.mu.Lock()
	c.tails[entity] = t
	c.mu.Unlock()
	return t
}

func (c *stmtCache) get(key string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.m[key]
	return s, ok
}

// getParams is get for a statement whose first value is supplied per call
// and whose others are the rule variables' params (putParams).
func (c *stmtCache) getParams(key string) (string, []any, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.m[key]
	return s, c.params[key], ok
}

func (c *stmtCache) putParams(key, sql string, params []any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) < maxCached {
		c.m[key] = sql
		if len(params) > 0 {
			c.params[key] = params
		}
	}
}

// withID is the values of a kept get: the id, then the params.
func withID(id string, params []any) []any {
	if len(params) == 0 {
		return []any{id}
	}
	out := make([]any, 0, 1+len(params))
	return append(append(out, id), params...)
}

func (c *stmtCache) put(key, sql string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) < maxCached {
		c.m[key] = sql
	}
}
