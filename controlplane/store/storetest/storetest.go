// Package storetest gives tests a PostgreSQL database URL of their own, from the server
// that .ci/postgres.sh starts (AGENTPROOF_TEST_POSTGRES_URL).
package storetest

import (
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// PostgresURL returns AGENTPROOF_TEST_POSTGRES_URL with search_path set to a fresh
// schema named <prefix>_<nanoseconds>_<pid>, dropped when the test ends, so parallel
// tests never share tables. When the variable is unset the test fails under CI (CI set:
// .ci/postgres.sh must have run) and is skipped locally, where no PostgreSQL may run;
// with -short it is skipped too.
func PostgresURL(t testing.TB, prefix string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test needs a PostgreSQL server; the full test command runs it")
	}
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
	schema := fmt.Sprintf("%s_%d_%d", prefix, time.Now().UnixNano(), os.Getpid())
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("creating schema: %v", err)
	}
	t.Cleanup(func() {
		if db, err := sql.Open("pgx", u); err == nil {
			db.Exec("DROP SCHEMA " + schema + " CASCADE")
			db.Close()
		}
	})
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "search_path=" + schema
}
