package api

import (
	"net/http"

	"github.com/rs/cors"
)

// CORS lets browser apps on origins call the API: preflights answer 204 with
// the allowed methods and headers (Authorization, Content-Type), and
// responses expose X-Request-Id and the rate-limit headers. origins are exact
// origins or "*"; none turns CORS off (next is returned as is). Credentials
// are bearer headers, never cookies, so credentialed CORS stays off.
func CORS(origins []string, next http.Handler) http.Handler {
	if len(origins) == 0 {
		return next
	}
	return cors.New(cors.Options{
		AllowedOrigins: origins,
		AllowedMethods: []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete},
		AllowedHeaders: []string{"Authorization", "Content-Type", "X-Request-Id"},
		ExposedHeaders: []string{"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"},
		MaxAge:         600,
	}).Handler(next)
}
