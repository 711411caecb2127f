package server

import (
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/schema"
)

// openAPIPending stands in until the OpenAPI generator is wired.
type openAPIPending struct{}

func (openAPIPending) OpenAPI(schema.Info) ([]byte, error) {
	return nil, apperr.New(apperr.Unavailable, "OpenAPI generation is not available yet")
}
