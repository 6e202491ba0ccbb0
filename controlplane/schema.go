package controlplane

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schemaFS holds the PRP event, terminal and result JSON Schemas (draft 2020-12).
//
//go:embed schemas/*.json
var schemaFS embed.FS

const schemaBase = "https://agentproof.dev/schemas/prp/v1/"

type prpSchemas struct {
	event, terminal, result *jsonschema.Schema
}

var (
	schemasOnce sync.Once
	schemas     prpSchemas
	schemasErr  error
)

func loadSchemas() (prpSchemas, error) {
	schemasOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		for _, name := range []string{"event", "terminal", "result"} {
			b, err := schemaFS.ReadFile("schemas/" + name + ".schema.json")
			if err != nil {
				schemasErr = err
				return
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				schemasErr = fmt.Errorf("schema %s: %w", name, err)
				return
			}
			if err := c.AddResource(schemaBase+name+".schema.json", doc); err != nil {
				schemasErr = err
				return
			}
		}
		var err error
		if schemas.event, err = c.Compile(schemaBase + "event.schema.json"); err != nil {
			schemasErr = err
			return
		}
		if schemas.terminal, err = c.Compile(schemaBase + "terminal.schema.json"); err != nil {
			schemasErr = err
			return
		}
		schemas.result, schemasErr = c.Compile(schemaBase + "result.schema.json")
	})
	return schemas, schemasErr
}

// validateShape validates raw JSON against one of the embedded schemas and returns the
// first issue as a message, or "" when valid.
func validateShape(which string, raw []byte) string {
	s, err := loadSchemas()
	if err != nil {
		panic(fmt.Sprintf("controlplane: embedded schemas do not compile: %v", err))
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return "not valid JSON: " + err.Error()
	}
	var sch *jsonschema.Schema
	switch which {
	case "event":
		sch = s.event
	case "terminal":
		sch = s.terminal
	default:
		sch = s.result
	}
	if err := sch.Validate(v); err != nil {
		return firstIssue(err)
	}
	return ""
}

// firstIssue returns the deepest first cause of a validation error on one line.
func firstIssue(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := "/" + strings.Join(ve.InstanceLocation, "/")
	return fmt.Sprintf("at %s: %s", loc, ve.ErrorKind.LocalizedString(message.NewPrinter(language.English)))
}

// PRPSchema returns the embedded PRP JSON Schema (draft 2020-12) the control plane
// validates with: name "event" (paperclip.prp.event.v1, what POST /events takes for a
// PRP event), "terminal" (paperclip.prp.terminal.v1) or "result"
// (paperclip.run_result.v1). Each has its own $id under
// https://agentproof.dev/schemas/prp/v1/ and refers to the others by relative file
// name. Errors: an unknown name (fs.ErrNotExist).
func PRPSchema(name string) ([]byte, error) {
	return schemaFS.ReadFile("schemas/" + name + ".schema.json")
}
