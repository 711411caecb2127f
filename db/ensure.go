package db

import (
	"context"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
)

// EnsureDatabase creates database name on the server baseURL points at
// unless it exists, and returns baseURL with its path set to that database.
// Tests and helper processes use it to keep their data apart from the
// shared test database; it does not migrate.
func EnsureDatabase(ctx context.Context, baseURL, name string) (string, error) {
	admin, err := Open(ctx, baseURL, 2)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	var n int
	if err := admin.GetContext(ctx, &n, `SELECT count(*) FROM pg_database WHERE datname = $1`, name); err != nil {
		return "", err
	}
	if n == 0 {
		// CREATE DATABASE takes no bind parameters: the name is quoted as an identifier.
		if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil &&
			!strings.Contains(err.Error(), "already exists") { // a concurrent creator won
			return "", err
		}
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}
