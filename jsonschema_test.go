package agentproof_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestJSONSchemaDraftsOnFirstUse checks the patch of third_party/jsonschema
// (PATCH.md): each draft's meta-schemas are compiled when a schema of that draft is
// first compiled, concurrently from several goroutines (run with -race), and they do
// their work: a schema the draft's meta-schema refuses is refused, a valid one
// validates instances. The tests of the library itself are not in the copy.
func TestJSONSchemaDraftsOnFirstUse(t *testing.T) {
	t.Parallel()
	drafts := []string{
		"http://json-schema.org/draft-04/schema#",
		"http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2019-09/schema",
		"https://json-schema.org/draft/2020-12/schema",
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(drafts))
	for i := range 4 {
		for _, d := range drafts {
			wg.Go(func() {
				if err := checkDraft(d, i); err != nil {
					errs <- fmt.Errorf("%s: %w", d, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// checkDraft compiles a valid and an invalid schema of draft d (n makes its URLs
// unique) and validates two instances.
func checkDraft(d string, n int) error {
	c := jsonschema.NewCompiler()
	good := map[string]any{"$schema": d, "type": "object", "required": []any{"a"},
		"properties": map[string]any{"a": map[string]any{"type": "integer", "minimum": 1.0}}}
	bad := map[string]any{"$schema": d, "type": 12.0}
	goodURL, badURL := fmt.Sprintf("mem://good-%d.json", n), fmt.Sprintf("mem://bad-%d.json", n)
	if err := c.AddResource(goodURL, good); err != nil {
		return err
	}
	if err := c.AddResource(badURL, bad); err != nil {
		return err
	}
	sch, err := c.Compile(goodURL)
	if err != nil {
		return fmt.Errorf("valid schema refused: %w", err)
	}
	if err := sch.Validate(map[string]any{"a": 2.0}); err != nil {
		return fmt.Errorf("valid instance refused: %w", err)
	}
	if err := sch.Validate(map[string]any{"a": 0.0}); err == nil {
		return errors.New("instance below the minimum accepted")
	}
	_, err = c.Compile(badURL)
	var sve *jsonschema.SchemaValidationError
	if !errors.As(err, &sve) {
		return fmt.Errorf("schema with \"type\": 12 not refused by the meta-schema: %v", err)
	}
	if !strings.Contains(sve.Error(), "type") {
		return fmt.Errorf("meta-schema error does not name the keyword: %v", sve)
	}
	return nil
}
