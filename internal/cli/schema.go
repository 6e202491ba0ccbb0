package cli

import (
	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/campaign/flows"
	"github.com/agentproof/agentproof/catalog"
)

// newSchemaCmd is `agentproof schema`: it prints the catalog JSON Schema with the
// flow registry's flows as a case's flows (catalog.Schema; byte for byte the
// repository's catalog/schema/catalog.schema.json, which lists the same flows).
func newSchemaCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of a catalog YAML file, for editors",
		Long: `Print the JSON Schema (draft 2020-12) of one catalog YAML document, the file the
default catalog's files name in their first line. Save it next to your catalog and
name it in the first line of each of your YAML files, so that an editor using
yaml-language-server (VS Code's YAML extension, for one) checks keys, types and
enumerations as you type:

  agentproof schema > catalog.schema.json
  # first line of mine.yaml:
  # yaml-language-server: $schema=catalog.schema.json

The schema checks the shape of one file; 'agentproof validate' checks the whole
catalog (references, sizes, secrets, matchers, templates, reference scripts).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			schema, err := catalog.Schema(flows.Names())
			if err != nil {
				return err
			}
			_, err = a.stdout.Write(schema)
			return err
		},
	}
}
