// Package load is the load generator of DDS's benchmarks: a fixed number of
// concurrent workers issue requests (HTTP, or any Go call such as direct SQL)
// for a bounded time and/or count, and the run is summarised as requests,
// errors, req/s and latency percentiles. It also has the pieces every
// benchmark needs beside the load: a keep-alive HTTP client tuned for
// loopback, an RSS sampler for a child process, a minimal hand-written
// net/http handler (the HTTP ceiling), and a table printer with ratios
// against a baseline measured in the same run.
//
// Typical use:
//
//	opts := load.Options{Concurrency: 16, Duration: 10 * time.Second}
//	client := load.Client(opts.Concurrency)
//	res := load.HTTP(ctx, "GET by id", opts, client, func(ctx context.Context) (*http.Request, error) {
//		return http.NewRequestWithContext(ctx, "GET", url+"/x/"+ids[rand.IntN(len(ids))], nil)
//	})
//	direct := load.Direct(ctx, "GET direct SQL", opts.Concurrency, opts.Duration, func(ctx context.Context) error { ... })
//	var t load.Table
//	t.Add(direct)
//	t.Add(res, direct) // res's req/s as a share of direct's
//	t.Print(os.Stdout)
package load

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Options.
const (
	DefaultConcurrency = 16
	DefaultDuration    = 10 * time.Second
	// MaxDuration bounds every run, whatever the options say.
	MaxDuration = 10 * time.Minute
)

// Options bound a run. A run ends when Duration has passed, MaxRequests
// requests were issued (if > 0), or ctx ends — whichever comes first.
type Options struct {
	Concurrency int           // workers; DefaultConcurrency when 0
	Duration    time.Duration // DefaultDuration when 0; capped at MaxDuration
	MaxRequests int64         // 0: bounded by Duration only
	// Warmup runs the same load for this long before measuring; its
	// requests are not counted.
	Warmup time.Duration
}

func (o Options) normalized() Options {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Duration <= 0 {
		o.Duration = DefaultDuration
	}
	o.Duration = min(o.Duration, MaxDuration)
	o.Warmup = min(max(o.Warmup, 0), MaxDuration)
	return o
}

// Result summarises a run. Latencies are of successful requests only.
type Result struct {
	Name     string
	Requests int64 // completed requests, successful or not
	Errors   int64 // failed requests (an error, or a non-2xx status over HTTP)
	Elapsed  time.Duration
	RPS      float64 // successful requests per second
	P50      time.Duration
	P90      time.Duration
	P99      time.Duration
	Max      time.Duration
	// FirstError describes the first failure, for diagnosis.
	FirstError string

	samples []time.Duration // sorted latencies, for Merge
}

// OK is the number of successful requests.
func (r Result) OK() int64 { return r.Requests - r.Errors }

func (r Result) String() string {
	s := fmt.Sprintf("%s: %d requests (%d errors) in %s, %.0f req/s, p50 %s p90 %s p99 %s max %s",
		r.Name, r.Requests, r.Errors, r.Elapsed.Round(time.Millisecond), r.RPS,
		FormatDuration(r.P50), FormatDuration(r.P90), FormatDuration(r.P99), FormatDuration(r.Max))
	if r.FirstError != "" {
		s += "; first error: " + r.FirstError
	}
	return s
}

// Run calls fn from opts.Concurrency workers until the run's bounds are
// reached and summarises the calls. fn's error marks a failed request.
// Calls in flight when the time is up complete and count (Elapsed includes
// them); fn's ctx ends only with the caller's ctx or Grace after the end.
func Run(ctx context.Context, name string, opts Options, fn func(ctx context.Context) error) Result {
	opts = opts.normalized()
	if opts.Warmup > 0 {
		run(ctx, opts.Concurrency, opts.Warmup, 0, fn)
	}
	res := run(ctx, opts.Concurrency, opts.Duration, opts.MaxRequests, fn)
	res.Name = name
	return res
}

// Direct measures fn (for example a SQL statement run straight from Go)
// with the same workers and accounting as HTTP.
func Direct(ctx context.Context, name string, concurrency int, duration time.Duration, fn func(ctx context.Context) error) Result {
	return Run(ctx, name, Options{Concurrency: concurrency, Duration: duration}, fn)
}

// HTTP sends the requests newReq builds (with the ctx it is given) through
// client. A transport error or a non-2xx status is a failed request. Bodies
// are read to the end so connections are reused.
func HTTP(ctx context.Context, name string, opts Options, client *http.Client, newReq func(ctx context.Context) (*http.Request, error)) Result {
	return Run(ctx, name, opts, func(ctx context.Context) error {
		req, err := newReq(ctx)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			_, _ = io.Copy(io.Discard, resp.Body)
			return fmt.Errorf("%s %s: status %d: %s", req.Method, req.URL.Path, resp.StatusCode, b)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	})
}

type worker struct {
	lat      []time.Duration
	requests int64
	errors   int64
}

// Grace is how long calls in flight when a run's time is up may take to
// finish before their ctx is cancelled.
const Grace = 30 * time.Second

func run(ctx context.Context, concurrency int, d time.Duration, maxRequests int64, fn func(ctx context.Context) error) Result {
	start := time.Now()
	deadline := start.Add(d)
	// Calls in flight at the deadline finish normally (and are counted), so
	// the server under test sees no aborted requests; only a call still
	// running Grace after the deadline, or the caller's ctx, cancels them.
	ctx, cancel := context.WithDeadline(ctx, deadline.Add(Grace))
	defer cancel()
	var issued atomic.Int64
	var firstErr atomic.Pointer[string]
	workers := make([]worker, concurrency)
	var wg sync.WaitGroup
	for i := range workers {
		w := &workers[i]
		w.lat = make([]time.Duration, 0, 4096)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(deadline) {
				if maxRequests > 0 && issued.Add(1) > maxRequests {
					return
				}
				t0 := time.Now()
				err := fn(ctx)
				el := time.Since(t0)
				if err != nil && ctx.Err() != nil {
					return // cancelled by the caller or the grace bound, not a failure of the server
				}
				w.requests++
				if err != nil {
					w.errors++
					msg := err.Error()
					firstErr.CompareAndSwap(nil, &msg)
					continue
				}
				w.lat = append(w.lat, el)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var res Result
	var all []time.Duration
	for i := range workers {
		res.Requests += workers[i].requests
		res.Errors += workers[i].errors
		all = append(all, workers[i].lat...)
	}
	res.Elapsed = elapsed
	if elapsed > 0 {
		res.RPS = float64(res.OK()) / elapsed.Seconds()
	}
	if p := firstErr.Load(); p != nil {
		res.FirstError = *p
	}
	res.setSamples(all)
	return res
}

func (r *Result) setSamples(all []time.Duration) {
	slices.Sort(all)
	r.samples = all
	r.P50, r.P90, r.P99 = Percentile(all, 50), Percentile(all, 90), Percentile(all, 99)
	r.Max = 0
	if len(all) > 0 {
		r.Max = all[len(all)-1]
	}
}

// Merge combines runs of the same load (for example rounds interleaved
// with other contenders, so background noise falls on all of them alike)
// into one result: counts and elapsed times add up, req/s is over the
// total elapsed time, percentiles are over every sample.
func Merge(name string, runs ...Result) Result {
	res := Result{Name: name}
	var all []time.Duration
	for _, r := range runs {
		res.Requests += r.Requests
		res.Errors += r.Errors
		res.Elapsed += r.Elapsed
		all = append(all, r.samples...)
		if res.FirstError == "" {
			res.FirstError = r.FirstError
		}
	}
	if res.Elapsed > 0 {
		res.RPS = float64(res.OK()) / res.Elapsed.Seconds()
	}
	res.setSamples(all)
	return res
}

// Percentile returns the nearest-rank p-th percentile of sorted latencies
// (0 for none).
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*p/100+0.999999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// Client returns a keep-alive HTTP client for loopback load with
// concurrency workers: one idle connection per worker, no proxy, no
// compression, a generous timeout so a stuck server fails requests rather
// than hanging the run.
func Client(concurrency int) *http.Client {
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        concurrency * 4,
			MaxIdleConnsPerHost: concurrency,
			MaxConnsPerHost:     0,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
			ForceAttemptHTTP2:   false,
		},
	}
}
