package flows

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentproof/agentproof/catalog"
)

var update = flag.Bool("update", false, "rewrite catalog/schema/catalog.schema.json with the registered flows")

// TestSchemaListsTheFlows: the catalog's schema as the repository holds it (the file
// editors read, catalog.SchemaJSON) is what `agentproof schema` prints — the schema
// with the registered flows as a case's flow enumeration, sorted — so that adding a
// flow is refused here until the file is regenerated (-update).
func TestSchemaListsTheFlows(t *testing.T) {
	schema, err := catalog.Schema(Names())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Enum []catalog.Flow `json:"enum"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(schema, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Defs["case"].Properties["flow"].Enum; !slices.Equal(got, Names()) {
		t.Errorf("the schema's flows are %v, want %v", got, Names())
	}
	if *update {
		if err := os.WriteFile(filepath.Join("..", "..", "catalog", "schema", "catalog.schema.json"), schema, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(schema, catalog.SchemaJSON) {
		t.Error("catalog/schema/catalog.schema.json does not list the registered flows; run go test ./campaign/flows -run TestSchemaListsTheFlows -update")
	}
}
