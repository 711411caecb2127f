package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
)

type recorded struct{ status, ctype, cache, body string }

func record(h http.Handler, path string) recorded {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "http://x"+path, nil)
	h.ServeHTTP(rec, req)
	return recorded{fmt.Sprint(rec.Code), rec.Header().Get("Content-Type"), rec.Header().Get("Cache-Control"), rec.Body.String()}
}
