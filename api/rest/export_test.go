package rest

import (
	"net/url"

	"github.com/dds-project/dds/query"
)

// ParseListQueryForTest exposes ParseListQuery to the external tests.
func ParseListQueryForTest(q url.Values) (query.List, error) { return ParseListQuery(q, "Product") }
