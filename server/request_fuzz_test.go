package server

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentproof/agentproof/controlplane"
)

// FuzzCheckJSONText: checkJSONText never panics; what it refuses is an invalid_request
// naming a JSONPath; a valid JSON body it accepts is valid UTF-8, holds no NUL in any
// string and decodes to the same strings its bytes spell (no U+FFFD substitution).
func FuzzCheckJSONText(f *testing.F) {
	for _, s := range []string{
		`{"a":"b"}`, `{"a":["x",{"k\u0000":1}]}`, "{\"a\":\"\xff\"}", `{"a":"\ud800"}`, `{"a":"\ud83d\ude00"}`,
		"{\"a\":\"\xef\xbf\xbd\"}", `{"a":"\ufffd"}`, `[[[[[]]]]]`, `{"a":`, `"\u0000"`, `{"a b":{"c":[1,2,"\u0000"]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := checkJSONText(b)
		if err != nil {
			if controlplane.CodeOf(err) != "invalid_request" || !strings.Contains(err.Error(), "$") {
				t.Fatalf("checkJSONText(%q) = %v, want invalid_request naming a path", b, err)
			}
			return
		}
		if !json.Valid(b) {
			return
		}
		if !utf8.Valid(b) {
			t.Fatalf("accepted %q, which is not valid UTF-8", b)
		}
		var v any
		if json.Unmarshal(b, &v) != nil {
			return // nesting beyond encoding/json's own limit
		}
		var walk func(v any)
		walk = func(v any) {
			switch x := v.(type) {
			case string:
				if strings.ContainsRune(x, 0) {
					t.Fatalf("accepted %q, which holds NUL", b)
				}
			case []any:
				for _, c := range x {
					walk(c)
				}
			case map[string]any:
				for k, c := range x {
					walk(k)
					walk(c)
				}
			}
		}
		walk(v)
	})
}
