package catalog

import _ "embed"

// SchemaJSON is the JSON Schema (draft 2020-12) of one catalog YAML document,
// catalog/schema/catalog.schema.json, for editors and external tools (`agentproof
// schema` prints it). Load checks everything the schema says and more (references,
// sizes, secrets, matchers, templates); the schema does not replace `agentproof
// validate`.
//
//go:embed schema/catalog.schema.json
var SchemaJSON []byte

// DefaultSchemaModeline is the first line of every default catalog file: the
// yaml-language-server modeline that makes an editor (VS Code's YAML extension, any
// client of yaml-language-server) validate the file against SchemaJSON, named by its
// path relative to catalog/default/. A user's catalog names its own copy the same way
// (`agentproof schema > catalog.schema.json`, then "# yaml-language-server:
// $schema=catalog.schema.json"). It is a YAML comment: it changes no declaration and no
// fingerprint.
const DefaultSchemaModeline = "# yaml-language-server: $schema=../schema/catalog.schema.json"
