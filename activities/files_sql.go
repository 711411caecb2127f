package activities

import "database/sql"

var sqlNoRows = sql.ErrNoRows
