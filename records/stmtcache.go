package records

import "sync"

// stmtCache keeps SQL text per schema version for the hot paths (get by id,
// create) whose text depends only on the entity and the fields present, so
// a request binds values to text built once. It lives on the schema version
// (schema.Active.Memo), so a schema change starts a fresh cache. Bounded:
// past maxCached texts, statements are built per call.
type stmtCache struct {
	mu sync.RWMutex
	m  map[string]string
}

const maxCached = 1024

func (sc *Scope) stmts() *stmtCache {
	return sc.Schema.Memo("records.stmtCache", func() any { return &stmtCache{m: map[string]string{}} }).(*stmtCache)
}

func (c *stmtCache) get(key string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.m[key]
	return s, ok
}

func (c *stmtCache) put(key, sql string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) < maxCached {
		c.m[key] = sql
	}
}
