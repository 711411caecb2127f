package load

import (
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
)

// Vectors makes embeddings clustered like real ones: 200 random centroids,
// each vector a centroid plus Gaussian noise. The sequence is the same for
// the same dims (fixed seed), so runs search the same corpus. Safe for
// concurrent use.
type Vectors struct {
	dims      int
	centroids [][]float32
	mu        sync.Mutex
	rng       *rand.Rand
}

// NewVectors returns a generator of dims-dimensional vectors.
func NewVectors(dims int) *Vectors {
	g := &Vectors{dims: dims, rng: rand.New(rand.NewPCG(1, 2))}
	for range 200 {
		g.centroids = append(g.centroids, g.noise(1))
	}
	return g
}

func (g *Vectors) noise(sd float64) []float32 {
	v := make([]float32, g.dims)
	for i := range v {
		v[i] = float32(g.rng.NormFloat64() * sd)
	}
	return v
}

// Next returns the next vector.
func (g *Vectors) Next() []float32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.centroids[g.rng.IntN(len(g.centroids))]
	v := g.noise(0.35)
	for i := range v {
		v[i] += c[i]
	}
	return v
}

// Recall is the share of found's ids that are among exact's (recall@k when
// exact holds the true top k of each query and found the top k returned).
func Recall(exact, found [][]string) float64 {
	hits, total := 0, 0
	for i := range exact {
		want := map[string]bool{}
		for _, id := range exact[i] {
			want[id] = true
		}
		total += len(exact[i])
		if i >= len(found) {
			continue
		}
		for _, id := range found[i] {
			if want[id] {
				hits++
			}
		}
	}
	if total == 0 {
		return 0
	}
	return float64(hits) / float64(total)
}

// WithOptions is the Postgres URL u (URL or key=value form) with the libpq
// "options" parameter set, e.g. "-c hnsw.ef_search=100".
func WithOptions(u, options string) string {
	if options == "" {
		return u
	}
	if strings.Contains(u, "://") {
		if p, err := url.Parse(u); err == nil {
			q := p.Query()
			q.Set("options", options)
			// Spaces as %20: pgx reads a "+" in the query as itself.
			p.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
			return p.String()
		}
	}
	return u + " options='" + options + "'"
}
