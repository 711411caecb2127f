package server_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/dds-project/dds/internal/testenv"
)

// Three servers behind one (trusted) proxy share the per-IP limit: a
// client that spreads 300 requests over them gets the limit of 60, not
// three times it. The servers share their counts after every 12 requests
// here (SyncLimits, what the background loop does every
// DDS_RATE_SYNC_INTERVAL), so the count is exact; with a timed interval the
// slack is what the other servers admit within one interval.
func TestThePerIPLimitHoldsAcrossThreeServers(t *testing.T) {
	t.Parallel()
	var servers []*testenv.App
	for range 3 {
		cfg := testenv.Config(t)
		cfg.RateGlobal, cfg.TrustProxy, cfg.RateSyncInterval = 60, true, time.Hour // synced by the test
		servers = append(servers, testenv.NewServer(t, cfg))
	}
	// A client address of its own: the shared counters outlive the test.
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	ip := fmt.Sprintf("198.51.%d.%d", b[0], b[1])
	admitted, refused := 0, 0
	for i := range 300 {
		switch r := servers[i%3].Do(t, "GET", "/api/v1/openapi.json", "", nil, "X-Forwarded-For", ip); r.Status {
		case http.StatusTooManyRequests:
			refused++
		default:
			admitted++
		}
		if i%12 == 11 {
			for range 2 { // twice: the first servers to sync learn of the later ones in the second pass
				for _, s := range servers {
					if err := s.Server.SyncLimits(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	t.Logf("admitted %d, refused %d of 300 over three servers (limit 60)", admitted, refused)
	if admitted != 60 {
		t.Fatalf("three servers admitted %d requests of one client under a per-IP limit of 60 (want 60, not up to 180)", admitted)
	}
}
