package operation

import (
	"container/list"
	"sync"
	"unsafe"
	"weak"

	"github.com/wundergraph/graphql-go-tools/v2/pkg/ast"

	"github.com/dds-project/dds/graphql/model"
)

// opKey identifies a prepared operation. The model's identity stands for
// the tenant's schema version and the credential's visibility (ModelFor
// builds one model per version and visibility): a schema change or a
// narrower key looks up another entry and never reuses a plan validated
// against a schema it may not see. The key holds the model weakly, so the
// cache does not keep a replaced schema's models alive; a weak pointer
// stays distinct from every other model's after its model is collected.
type opKey struct {
	m           weak.Pointer[model.Model]
	name, query string
}

// opCache is a least-recently-used cache of prepared operations bounded in
// entries and in (estimated) bytes. Only successfully prepared operations
// are stored: a refusal may depend on the request's variables.
type opCache struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int
	bytes      int
	order      *list.List // of *opEntry, most recently used first
	items      map[opKey]*list.Element
}

type opEntry struct {
	key opKey
	op  *Operation
}

func newOpCache(maxEntries, maxBytes int) *opCache {
	return &opCache{maxEntries: maxEntries, maxBytes: maxBytes, order: list.New(), items: map[opKey]*list.Element{}}
}

func (c *opCache) get(k opKey) (*Operation, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*opEntry).op, true
}

// put stores op unless it alone exceeds the byte bound, evicting the least
// recently used entries to stay within both bounds.
func (c *opCache) put(k opKey, op *Operation) {
	if c.maxEntries <= 0 || op.size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; ok {
		return // prepared concurrently by another request
	}
	c.items[k] = c.order.PushFront(&opEntry{key: k, op: op})
	c.bytes += op.size
	for len(c.items) > c.maxEntries || c.bytes > c.maxBytes {
		el := c.order.Back()
		e := el.Value.(*opEntry)
		c.order.Remove(el)
		delete(c.items, e.key)
		c.bytes -= e.op.size
	}
}

// stats reports the entries and bytes held.
func (c *opCache) stats() (entries, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items), c.bytes
}

// documentBytes estimates the memory a document holds: its input and the
// capacity of its node slices.
func documentBytes(d *ast.Document) int {
	n := cap(d.Input.RawBytes)
	add := func(c int, size uintptr) { n += c * int(size) }
	add(cap(d.RootNodes), unsafe.Sizeof(ast.Node{}))
	add(cap(d.OperationDefinitions), unsafe.Sizeof(ast.OperationDefinition{}))
	add(cap(d.SelectionSets), unsafe.Sizeof(ast.SelectionSet{}))
	add(cap(d.Selections), unsafe.Sizeof(ast.Selection{}))
	add(cap(d.Fields), unsafe.Sizeof(ast.Field{}))
	add(cap(d.InlineFragments), unsafe.Sizeof(ast.InlineFragment{}))
	add(cap(d.FragmentSpreads), unsafe.Sizeof(ast.FragmentSpread{}))
	add(cap(d.FragmentDefinitions), unsafe.Sizeof(ast.FragmentDefinition{}))
	add(cap(d.Arguments), unsafe.Sizeof(ast.Argument{}))
	add(cap(d.Directives), unsafe.Sizeof(ast.Directive{}))
	add(cap(d.VariableDefinitions), unsafe.Sizeof(ast.VariableDefinition{}))
	add(cap(d.Types), unsafe.Sizeof(ast.Type{}))
	add(cap(d.ObjectFields), unsafe.Sizeof(ast.ObjectField{}))
	add(cap(d.ObjectValues)+cap(d.ListValues), unsafe.Sizeof(ast.ListValue{}))
	add(cap(d.StringValues)+cap(d.IntValues)+cap(d.FloatValues)+cap(d.EnumValues)+cap(d.VariableValues), 32)
	for _, s := range d.SelectionSets {
		n += 8 * cap(s.SelectionRefs)
	}
	// The executor's tree is about as large again as the operation's nodes.
	return 2 * n
}
