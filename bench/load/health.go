package load

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// WaitHealthy polls url (a health endpoint of a process the benchmark
// started) until it answers 200, for at most limit. The error names the last
// failure, so a server that never came up says why.
func WaitHealthy(ctx context.Context, url string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy: %w (last: %w)", url, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
