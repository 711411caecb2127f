package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Call sends one request to url and returns the response body; it is the
// one JSON client of the bench programs (set-up calls and checks, not the
// measured load). body is nil (no body), a []byte sent as is, or a value
// sent as JSON; bearer, when set, goes in the Authorization header. The
// response must have status want (any 2xx when want is 0), else the error
// names the request and quotes the body. With dst non-nil the body is
// decoded into it.
func Call(ctx context.Context, c *http.Client, method, url, bearer string, body any, want int, dst any) ([]byte, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		if b != nil {
			rd = bytes.NewReader(b)
		}
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read the response: %w", method, req.URL.Path, err)
	}
	if ok := resp.StatusCode == want || want == 0 && resp.StatusCode/100 == 2; !ok {
		return nil, fmt.Errorf("%s %s: status %d, want %s: %.500s", method, req.URL.Path, resp.StatusCode, wantText(want), out)
	}
	if dst != nil {
		if err := json.Unmarshal(out, dst); err != nil {
			return nil, fmt.Errorf("%s %s: decode %.200s: %w", method, req.URL.Path, out, err)
		}
	}
	return out, nil
}

func wantText(want int) string {
	if want == 0 {
		return "2xx"
	}
	return fmt.Sprint(want)
}
