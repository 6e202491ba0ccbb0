package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/catalog"
)

// TestShardFingerprint: `run --shard i/N --fingerprint <hex>` runs the shard only when
// the plan it resolves (made of the selectors and --weights, or read from --plan) has
// that fingerprint — given whole or by its first 12 or more digits; a shard of another
// plan (other selectors, another shard count), a malformed fingerprint, or --fingerprint
// without --shard is refused with a usage error (exit 2) naming both plans.
func TestShardFingerprint(t *testing.T) {
	t.Parallel()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	calibration := catalog.Selector{Suites: []string{"calibration"}}
	cells, err := selectCells(c, calibration)
	if err != nil {
		t.Fatal(err)
	}
	p, err := planShards(cells, 2, "")
	if err != nil {
		t.Fatal(err)
	}
	fp := p.Fingerprint
	for _, tc := range []struct {
		name string
		sel  catalog.Selector
		f    shardFlags
		want string // "": accepted
	}{
		{"the whole fingerprint", calibration, shardFlags{shard: "1/2", fingerprint: fp}, ""},
		{"its first 12 digits, upper case", calibration, shardFlags{shard: "2/2", fingerprint: strings.ToUpper(fp[:12])}, ""},
		{"no fingerprint: not checked", calibration, shardFlags{shard: "1/2"}, ""},
		{"another selection", catalog.Selector{Suites: []string{"calibration", "grader-calibration"}}, shardFlags{shard: "1/2", fingerprint: fp}, "not the plan " + fp + " of --fingerprint"},
		{"another shard count", calibration, shardFlags{shard: "1/3", fingerprint: fp[:12]}, "not the plan " + fp[:12] + " of --fingerprint"},
		{"too short", calibration, shardFlags{shard: "1/2", fingerprint: fp[:11]}, "must be 12 to 64 hex digits"},
		{"not hex", calibration, shardFlags{shard: "1/2", fingerprint: "g" + fp[1:]}, "must be 12 to 64 hex digits"},
		{"without --shard", calibration, shardFlags{fingerprint: fp}, "give --shard too"},
	} {
		_, ref, err := shardSelection(c, tc.sel, tc.f)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want == "" && tc.f.shard != "" && ref.Fingerprint != fp:
			t.Errorf("%s: ran shard of plan %s, want %s", tc.name, ref.Fingerprint, fp)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		case tc.want != "" && !errors.As(err, new(*UsageError)):
			t.Errorf("%s: %v is no usage error (exit 2)", tc.name, err)
		}
	}
}
