package records

import (
	"context"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// AdmitsEdge reports whether the scope's principal may see a relationship
// event: each end whose entity has a read rule must be a record the
// principal can read now (an edge event names its ends by id only, so
// this reads them: one statement per ruled end). An end that no longer
// exists cannot be judged and hides the event. Without rules on either
// end it is true without a round trip. The live feed and the change feed
// call it per consumer, so edges between hidden records never reveal
// their ids.
func (s *Store) AdmitsEdge(ctx context.Context, sc *Scope, ev *outbox.Event) (bool, error) {
	if !sc.compiler.HasRules() {
		return true, nil // no rules: nothing to decode or read
	}
	x, err := ev.Edge()
	if err != nil {
		return false, err
	}
	for _, end := range []struct{ entity, id string }{{x.SourceEntity, x.SourceID}, {x.TargetEntity, x.TargetID}} {
		if !sc.compiler.ReadRestricted(end.entity) {
			continue
		}
		_, err := s.Get(ctx, sc, end.entity, end.id, query.Selection{Fields: []string{schema.ColID}})
		switch {
		case apperr.As(err).Code == apperr.NotFound:
			return false, nil
		case err != nil:
			return false, err
		}
	}
	return true, nil
}
