package auth

// SetAfterLookup sets the hook that runs between a lookup's read and its
// caching, the window a revocation can race (tests only).
func SetAfterLookup(a *Authenticator, f func()) { a.afterLookup = f }
