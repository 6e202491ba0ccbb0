package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/shard"
)

// shardFlags are the sharding flags of `run`: --shard i/N, the plan file of `list
// --shards N` (--plan) or the history to weigh cells with (--weights), and the
// fingerprint the plan must have (--fingerprint).
type shardFlags struct {
	shard       string
	plan        string
	weights     string
	fingerprint string
}

// add registers the flags on f.
func (s *shardFlags) add(f *pflag.FlagSet) {
	f.StringVar(&s.shard, "shard", "", "run shard `i/N` (1 ≤ i ≤ N) of the shard plan of --plan, or of the plan 'list --shards N' makes of the selectors and --weights")
	f.StringVar(&s.plan, "plan", "", "shard plan `file` printed by 'agentproof list --shards N' (refused when its suites' definitions differ from the catalog's)")
	f.StringVar(&s.weights, "weights", "", "history.json `file` whose durations weigh the cells when --shard plans the shards itself")
	f.StringVar(&s.fingerprint, "fingerprint", "", "the plan's fingerprint (`hex`, at least its first 12 digits, as 'list --shards N' prints it): --shard is refused when its plan has another")
}

// minFingerprintDigits is how many leading hex digits of a plan's fingerprint
// --fingerprint must give at least (as many as `list --shards` prints on stderr).
const minFingerprintDigits = 12

// checkFingerprint refuses (a usage error naming both) the plan p when want, the
// leading hex digits given with --fingerprint ("": no check), are not those of its
// fingerprint; want must be 12 to 64 lower- or upper-case hex digits.
func checkFingerprint(p *shard.Plan, want, shardFlag string) error {
	if want == "" {
		return nil
	}
	if len(want) < minFingerprintDigits || len(want) > len(p.Fingerprint) || strings.Trim(strings.ToLower(want), "0123456789abcdef") != "" {
		return usageErrorf("--fingerprint %q must be %d to %d hex digits of a shard plan's fingerprint", want, minFingerprintDigits, len(p.Fingerprint))
	}
	if !strings.HasPrefix(p.Fingerprint, strings.ToLower(want)) {
		return usageErrorf("--shard %s: the plan of this run is %s, not the plan %s of --fingerprint (another catalog, selection or --weights than the plan's: give the plan file with --plan)", shardFlag, p.Fingerprint, want)
	}
	return nil
}

// planShards builds the shard plan of cells in count shards, weighing cells with the
// history at weights ("": none, so that a workflow can pass an empty variable on its
// first run). A history that cannot be read is a usage error naming the flag.
func planShards(cells []*catalog.Cell, count int, weights string) (*shard.Plan, error) {
	var h *result.History
	if weights != "" {
		if _, err := os.Stat(weights); err != nil {
			return nil, usageErrorf("--weights: %v", err)
		}
		var err error
		if h, _, err = result.ReadHistory(weights); err != nil {
			return nil, usageErrorf("--weights %s: %v", weights, err)
		}
	}
	p, err := shard.Build(cells, count, shard.Estimate(cells, h))
	if err != nil {
		return nil, usageErrorf("--shards: %v", err)
	}
	return p, nil
}

// readShardPlan reads the plan file of `list --shards` and checks it against c. Every
// problem is a usage error naming the file.
func readShardPlan(path string, c *catalog.Catalog) (*shard.Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErrorf("--plan: %v", err)
	}
	p, err := shard.Decode(path, b)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	if err := p.Against(c); err != nil {
		return nil, usageErrorf("--plan %s: %v", path, err)
	}
	return p, nil
}

// shardSelection resolves `run --shard i/N`: the selector of shard i's cells and the
// reference recorded in plan.json. The plan is --plan's (then no selector may be
// given) or the one `list --shards N` prints for the selectors and --weights; with
// --fingerprint it must be the plan of that fingerprint (checkFingerprint), so that a
// machine whose catalog, selection or history differs never runs a shard of another
// plan. Without --shard, --plan, --weights and --fingerprint are refused; sel is
// returned as it is.
func shardSelection(c *catalog.Catalog, sel catalog.Selector, f shardFlags) (catalog.Selector, *result.ShardRef, error) {
	if f.shard == "" {
		if f.plan != "" || f.weights != "" || f.fingerprint != "" {
			return sel, nil, usageErrorf("--plan, --weights and --fingerprint choose and check the shard plan of --shard i/N: give --shard too")
		}
		return sel, nil, nil
	}
	index, count, err := shard.ParseIndex(f.shard)
	if err != nil {
		return sel, nil, &UsageError{Err: err}
	}
	var p *shard.Plan
	switch {
	case f.plan != "" && (!trimSelector(sel).IsEmpty() || f.weights != ""):
		return sel, nil, usageErrorf("--plan holds the selection and the weights: give no selector and no --weights with it")
	case f.plan != "":
		if p, err = readShardPlan(f.plan, c); err != nil {
			return sel, nil, err
		}
	default:
		cells, err := selectCells(c, sel)
		if err != nil {
			return sel, nil, err
		}
		if p, err = planShards(cells, count, f.weights); err != nil {
			return sel, nil, err
		}
	}
	if p.Count != count {
		return sel, nil, usageErrorf("--shard %s: the plan %s has %d shards, not %d", f.shard, p.Fingerprint, p.Count, count)
	}
	if err := checkFingerprint(p, f.fingerprint, f.shard); err != nil {
		return sel, nil, err
	}
	ref := &result.ShardRef{Index: index, Count: count, Fingerprint: p.Fingerprint}
	return catalog.Selector{IDs: p.IDs(index)}, ref, nil
}

// printShards writes the shard plan (asJSON false: the plan document; true: the GitHub
// Actions matrix of its shards, one line).
func (a *app) printShards(c *catalog.Catalog, p *shard.Plan, matrix bool) error {
	if matrix {
		return encodeLine(a, p.GitHubMatrix(c))
	}
	return p.Encode(a.stdout)
}

// shardSummary is the line `list --shards` prints on stderr: the count, the expected
// total, mean and longest shard, and the imbalance.
func shardSummary(p *shard.Plan) string {
	return fmt.Sprintf("%d cells in %d shards (plan %s): expected %s in all, %s per shard on average, the longest %s (+%.1f%%)",
		p.Cells, p.Count, p.Fingerprint[:12], msText(p.ExpectedMs), msText(p.MeanMs), msText(p.MaxMs), float64(p.Imbalance)/10)
}

// msText is a duration in ms as seconds with one decimal.
func msText(ms int64) string { return fmt.Sprintf("%.1f s", float64(ms)/1000) }
