package shard

import (
	"slices"
	"strconv"

	"github.com/agentproof/agentproof/catalog"
)

// Job is one shard as a GitHub Actions matrix entry: the --shard value ("i/N"), its
// index and the shard count, how many cells it runs, its expected minutes (rounded
// up), a job timeout in minutes and the credentials (environment variable names) its
// cells need.
type Job struct {
	Shard           string   `json:"shard"`
	Index           int      `json:"index"`
	Count           int      `json:"count"`
	Cells           int      `json:"cells"`
	ExpectedMinutes int64    `json:"expectedMinutes"`
	TimeoutMinutes  int64    `json:"timeoutMinutes"`
	Credentials     []string `json:"credentials"`
}

// Matrix is the shard matrix document: {include, fingerprint, count}.
type Matrix struct {
	Include     []Job  `json:"include"`
	Fingerprint string `json:"fingerprint"`
	Count       int    `json:"count"`
}

// Job timeouts: three times the expected time plus a quarter of an hour, at least 25
// minutes and at most GitHub Actions' 360.
const (
	minTimeoutMinutes = 25
	maxTimeoutMinutes = 360
)

// GitHubMatrix renders p as a matrix; cells are looked up in c for their credentials.
func (p *Plan) GitHubMatrix(c *catalog.Catalog) Matrix {
	m := Matrix{Fingerprint: p.Fingerprint, Count: p.Count, Include: make([]Job, 0, p.Count)}
	for _, s := range p.Shards {
		creds := []string{}
		for _, sc := range s.Cells {
			if cell := c.Cell(sc.ExecutionID); cell != nil {
				for _, cr := range cell.RequiredCredentials {
					if !slices.Contains(creds, cr) {
						creds = append(creds, cr)
					}
				}
			}
		}
		slices.Sort(creds)
		minutes := (s.ExpectedMs + 59_999) / 60_000
		m.Include = append(m.Include, Job{
			Shard: strconv.Itoa(s.Index) + "/" + strconv.Itoa(p.Count), Index: s.Index, Count: p.Count,
			Cells: len(s.Cells), ExpectedMinutes: minutes, Credentials: creds,
			TimeoutMinutes: min(maxTimeoutMinutes, max(minTimeoutMinutes, 3*minutes+15)),
		})
	}
	return m
}
