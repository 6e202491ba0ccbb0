package flows

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"gotest.tools/v3/golden"

	"github.com/agentproof/agentproof/catalog"
)

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
	// The file is what catalog.SchemaJSON embeds.
	path, err := filepath.Abs(filepath.Join("..", "..", "catalog", "schema", "catalog.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, string(schema), path, "catalog/schema/catalog.schema.json does not list the registered flows")
}
