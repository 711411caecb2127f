package live

import (
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/query"
)

// subIndex is a tenant's subscribers, indexed by the equality their
// filter requires (query.EqKey), so that an event is offered only to the
// subscribers it can match: those keyed on a value its record carries and
// those without a key. With 10,000 subscriptions each filtered on one of
// 100 values, an event costs 100 filter tests, not 10,000.
//
// The tenant's goroutine owns it and rebuilds it when the subscriber set
// changed (tenantFeed.version), so joins and leaves never wait for a
// delivery in progress.
type subIndex struct {
	all   []*Subscriber
	plain []*Subscriber // no key: offered every event
	// keyed maps entity → field → canonical value → subscribers; keys
	// holds each (entity, field)'s EqKey to read it from a record.
	keyed map[string]map[string]map[string][]*Subscriber
	keys  map[string]map[string]query.EqKey
}

func newSubIndex(subs map[*Subscriber]struct{}) *subIndex {
	ix := &subIndex{keyed: map[string]map[string]map[string][]*Subscriber{}, keys: map[string]map[string]query.EqKey{}}
	for r := range subs {
		ix.all = append(ix.all, r)
		k, ok := subKey(r)
		if !ok {
			ix.plain = append(ix.plain, r)
			continue
		}
		byField := ix.keyed[r.Name]
		if byField == nil {
			byField = map[string]map[string][]*Subscriber{}
			ix.keyed[r.Name] = byField
			ix.keys[r.Name] = map[string]query.EqKey{}
		}
		byValue := byField[k.Field]
		if byValue == nil {
			byValue = map[string][]*Subscriber{}
			byField[k.Field] = byValue
			ix.keys[r.Name][k.Field] = k
		}
		byValue[k.Value] = append(byValue[k.Value], r)
	}
	return ix
}

// subKey is r's equality key, if its filter has one.
func subKey(r *Subscriber) (query.EqKey, bool) {
	if r.Match == nil {
		return query.EqKey{}, false
	}
	return r.Match.Key()
}

// each calls fn for every subscriber ev may match, each at most once.
func (ix *subIndex) each(ev *outbox.Event, fn func(*Subscriber)) {
	for _, r := range ix.plain {
		fn(r)
	}
	byField := ix.keyed[ev.Name]
	if len(byField) == 0 {
		return
	}
	fields, err := ev.Fields()
	for field, byValue := range byField {
		var value string
		present, ok := false, false
		if err == nil {
			value, present, ok = ix.keys[ev.Name][field].Of(fields)
		}
		switch {
		case !ok: // not readable here: every subscriber keyed on the field tests it in full
			for _, subs := range byValue {
				for _, r := range subs {
					fn(r)
				}
			}
		case present:
			for _, r := range byValue[value] {
				fn(r)
			}
		}
	}
}
