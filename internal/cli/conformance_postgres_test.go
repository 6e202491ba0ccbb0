package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/controlplane/store/storetest"
	_ "github.com/jackc/pgx/v5/stdlib"
)

// TestConformanceTargetPostgres runs `agentproof conformance --target postgres` against
// AGENTPROOF_TEST_POSTGRES_URL (in a fresh schema). When that is unset the test fails
// under CI (CI set: .ci/postgres.sh must have run) and is skipped locally.
func TestConformanceTargetPostgres(t *testing.T) {
	t.Parallel()
	u := storetest.PostgresURL(t, "cli")
	var out, errOut bytes.Buffer
	code := Main([]string{"conformance", "--target", "postgres", "--postgres", u}, nil, &out, &errOut)
	if code != 0 || !strings.HasSuffix(strings.TrimSpace(out.String()), "63 passed, 0 failed") {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
}
