package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/dds-project/dds/jobs"
)

// jobCmd is `dds job watch ID`: it polls GET /api/v1/jobs/{id} and draws a
// progress bar until the job ends. It talks only to the public API.
func jobCmd(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "watch" {
		return errors.New("usage: dds job watch ID [--url URL] [--key KEY] [--every 500ms]")
	}
	fs := flag.NewFlagSet("job watch", flag.ContinueOnError)
	base := fs.String("url", envOr("DDS_URL", "http://127.0.0.1:8080"), "the DDS server (env DDS_URL)")
	key := fs.String("key", os.Getenv("DDS_API_KEY"), "an API key or access token with job:*:read (env DDS_API_KEY)")
	every := fs.Duration("every", 500*time.Millisecond, "how often to poll")
	var id string
	rest := args[1:]
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		id, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if id == "" && fs.NArg() > 0 {
		id = fs.Arg(0)
	}
	if id == "" {
		return errors.New("usage: dds job watch ID: the job id is missing")
	}
	if *key == "" {
		return errors.New("dds job watch needs an API key: --key or DDS_API_KEY")
	}
	u := strings.TrimRight(*base, "/") + "/api/v1/jobs/" + url.PathEscape(id)
	client := &http.Client{Timeout: 30 * time.Second}
	for {
		j, err := fetchJob(ctx, client, u, *key)
		if err != nil {
			return err
		}
		fmt.Fprint(out, "\r"+progressLine(j))
		switch j.Status {
		case "succeeded":
			fmt.Fprintf(out, "\n%d records written\n", j.Result.SuccessCount)
			return nil
		case "failed", "cancelled":
			fmt.Fprintln(out)
			return jobFailure(j)
		}
		select {
		case <-ctx.Done():
			fmt.Fprintln(out)
			return ctx.Err()
		case <-time.After(*every):
		}
	}
}

func fetchJob(ctx context.Context, c *http.Client, u, key string) (*jobs.Job, error) {
	//nolint:gosec // G704: the URL is the operator's own --url/DDS_URL; reaching it is the command's purpose.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := c.Do(req) //nolint:gosec // G704: see above
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		return nil, fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, e.Error.Message)
	}
	var j jobs.Job
	if err := json.Unmarshal(body, &j); err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	return &j, nil
}

// progressLine renders "import Product [#####-----]  50%  500/1000 running".
func progressLine(j *jobs.Job) string {
	const width = 30
	done, pct := 0, ""
	counts := fmt.Sprint(j.Progress.Processed)
	if t := j.Progress.Total; t != nil {
		counts += fmt.Sprintf("/%d", *t)
		if *t > 0 {
			done = int(min(j.Progress.Processed, *t) * width / *t)
			pct = fmt.Sprintf("%3d%%", min(j.Progress.Processed, *t)*100 / *t)
		}
	}
	if j.Status == jobs.StatusSucceeded {
		done, pct = width, "100%"
	}
	return fmt.Sprintf("%s %s [%s%s] %4s %s %-9s", j.Type, j.Entity, strings.Repeat("#", done),
		strings.Repeat("-", width-done), pct, counts, j.Status)
}

func jobFailure(j *jobs.Job) error {
	var b strings.Builder
	fmt.Fprintf(&b, "job %s %s", j.ID, j.Status)
	if j.Error != nil {
		fmt.Fprintf(&b, ": %s", j.Error.Message)
	}
	if j.Result != nil {
		for i, f := range j.Result.Failed {
			if i == 5 {
				fmt.Fprintf(&b, "\n  … %d failures in all (GET the job for the first 100)", j.Result.FailureCount)
				break
			}
			fmt.Fprintf(&b, "\n  item %d: %s", f.Index, f.Error.Message)
		}
	}
	return errors.New(b.String())
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
