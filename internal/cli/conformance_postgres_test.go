package cli

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// TestConformanceTargetPostgres runs `agentproof conformance --target postgres` against
// AGENTPROOF_TEST_POSTGRES_URL (in a fresh schema). When that is unset the test fails
// under CI (CI set: .ci/postgres.sh must have run) and is skipped locally.
func TestConformanceTargetPostgres(t *testing.T) {
	t.Parallel()
	u := os.Getenv("AGENTPROOF_TEST_POSTGRES_URL")
	if u == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("AGENTPROOF_TEST_POSTGRES_URL is unset under CI: .ci/postgres.sh must run first")
		}
		t.Skip("AGENTPROOF_TEST_POSTGRES_URL is unset (local run without PostgreSQL); CI fails instead")
	}
	db, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	schema := fmt.Sprintf("cli_%d_%d", time.Now().UnixNano(), os.Getpid())
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatal(err)
	}
	defer db.Exec("DROP SCHEMA " + schema + " CASCADE")
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	var out, errOut bytes.Buffer
	code := Main([]string{"conformance", "--target", "postgres", "--postgres", u + sep + "search_path=" + schema}, nil, &out, &errOut)
	if code != 0 || !strings.HasSuffix(strings.TrimSpace(out.String()), "53 passed, 0 failed") {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
}
