// Package operation is the GraphQL front end: a request's document is
// parsed, measured against the limits, its fragments inlined and repeated
// selections merged, validated against the model a credential sees (every
// operation of the document), and converted into the executor's tree;
// the result is kept in the one bounded cache of prepared operations,
// keyed by the model. Per request it then validates and coerces the
// variables. It reads no data.
package operation

import (
	"encoding/json"
	"math"
	"strconv"
	"sync"

	"github.com/dds-project/dds/graphql/model"
)

// Limits protect the server from expensive documents.
type Limits struct {
	MaxDocumentBytes int // size of the query text
	MaxDepth         int // field nesting (introspection excluded)
	MaxAliases       int // aliased fields per document
	// MaxComplexity bounds the estimated number of values a response can
	// hold: each field costs 1, and a list field multiplies the cost of its
	// selection by its limit (first, last, topK; the default page size
	// when absent).
	MaxComplexity int
}

// DefaultLimits are used for zero fields of Limits.
var DefaultLimits = Limits{MaxDocumentBytes: 64 << 10, MaxDepth: 12, MaxAliases: 50, MaxComplexity: 200000}

func (l Limits) withDefaults() Limits {
	if l.MaxDocumentBytes <= 0 {
		l.MaxDocumentBytes = DefaultLimits.MaxDocumentBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	if l.MaxAliases <= 0 {
		l.MaxAliases = DefaultLimits.MaxAliases
	}
	if l.MaxComplexity <= 0 {
		l.MaxComplexity = DefaultLimits.MaxComplexity
	}
	return l
}

// Bounds of the cache of prepared operations (per engine, so per process).
const (
	preparedEntries = 2048
	preparedBytes   = 64 << 20
)

// Frontend prepares requests against a model: the front end's pooled
// state and the cache of prepared operations (one per engine, so per
// process).
type Frontend struct {
	limits Limits
	// cache holds prepared operations; preparers and variableValidators
	// pool the library's stateful parser, validators and normalizer.
	cache              *opCache
	preparers          sync.Pool
	variableValidators sync.Pool
}

// NewFrontend returns a front end measuring documents against limits
// (zero fields take DefaultLimits).
func NewFrontend(limits Limits) *Frontend {
	return &Frontend{limits: limits.withDefaults(), cache: newOpCache(preparedEntries, preparedBytes)}
}

// Prepared is a prepared operation with one request's coerced variables.
type Prepared struct {
	Model *model.Model
	Op    *Operation
	Vars  map[string]any
}

// IntArg is an Int argument's or variable's value as an int.
func IntArg(v any) (int, bool) {
	switch x := v.(type) {
	case int64:
		return int(x), true
	case int:
		return x, true
	case float64:
		return int(x), true
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return int(n), true
		}
		// An Int variable may be written 2.0 or 3e1 (validation accepts
		// whole numbers in any JSON form).
		f, err := x.Float64()
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, false
		}
		return int(f), true
	case string:
		n, err := strconv.Atoi(x)
		return n, err == nil
	}
	return 0, false
}
