package graphql

import (
	"github.com/dds-project/dds/graphql/protocol"
)

// Location is where an error points in the query (env_test.go reads the
// errors' locations).
type Location = protocol.Location
