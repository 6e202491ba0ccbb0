package catalog

import _ "embed"

// SchemaJSON is the JSON Schema (draft 2020-12) of one catalog YAML document,
// catalog/schema/catalog.schema.json, for editors and external tools. Load checks
// everything the schema says and more (references, sizes, secrets, matchers,
// templates); the schema does not replace `agentproof validate`.
//
//go:embed schema/catalog.schema.json
var SchemaJSON []byte
