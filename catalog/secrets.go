package catalog

import (
	"regexp"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Raw-secret scan: a catalog never holds a credential's
// value, only a reference to it.
var (
	// rawSecretRE finds provider key shapes anywhere in a catalog file.
	rawSecretRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b(?:sk-(?:proj-)?|sk-ant-)[A-Za-z0-9_-]{12,}\b`) })
	// credentialKeyRE matches keys that name a credential: ending in api?key,
	// access?token, credential or secret, case-insensitively.
	credentialKeyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)(?:api.?key|access.?token|credential|secret)$`) })
	uuidRE          = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	})
)

// SecretRef is the only shape a secret may take in a catalog payload:
// {type: secret_ref, secretId, version: latest}. In a catalog, secretId is
// the name of a declared credential (resolved per attempt to the id of the secret the
// fixture registry created) or a UUID.
type SecretRef struct {
	Type     string `json:"type"`
	SecretID string `json:"secretId"`
	Version  string `json:"version"`
}

// IsSecretUUID reports whether a SecretRef's secretId is a UUID (a stored secret's id)
// rather than the name of a declared credential.
func IsSecretUUID(id string) bool { return uuidRE().MatchString(id) }

// scanRawSecrets reports every scalar (value or key) of a document that looks like a
// provider key. The message never repeats the value.
func scanRawSecrets(file string, root *yaml.Node, ps *problems) {
	// Without following aliases a document is a tree: every node is visited once.
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil || n.Kind == yaml.AliasNode {
			return
		}
		// Every key shape starts with "sk-"; the substring test spares the regexp
		// (slow with \b) on nearly every scalar.
		if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "sk-") && rawSecretRE().MatchString(n.Value) {
			ps.add(Pos{File: file, Line: n.Line, Column: n.Column},
				"contains a raw secret-looking value; declare a credential and refer to it with {type: secret_ref, secretId: <credential>, version: latest}")
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(root)
}

// payloadScanner checks a free-form payload (driver config, environment config,
// command args, definition metadata): credential-named keys must not hold plain
// strings, env maps hold only secret references, and every secret reference is well
// formed and names a declared credential.
type payloadScanner struct {
	file        string
	ps          *problems
	credentials map[string]*Credential
	seen        map[*yaml.Node]bool
}

func (s *payloadScanner) at(n *yaml.Node) Pos {
	return Pos{File: s.file, Line: n.Line, Column: n.Column}
}

func (s *payloadScanner) scan(n *yaml.Node, where string) {
	if n == nil || s.seen[n] {
		return
	}
	s.seen[n] = true
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.SequenceNode:
		for _, c := range n.Content {
			s.scan(c, where)
		}
	case yaml.MappingNode:
		if looksLikeSecretRef(n) {
			s.checkSecretRef(n, where)
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			for v.Kind == yaml.AliasNode && v.Alias != nil {
				v = v.Alias
			}
			key := k.Value
			path := where + "." + key
			switch {
			case key == "env" && v.Kind == yaml.MappingNode:
				for j := 0; j+1 < len(v.Content); j += 2 {
					ek, ev := v.Content[j], v.Content[j+1]
					for ev.Kind == yaml.AliasNode && ev.Alias != nil {
						ev = ev.Alias
					}
					epath := path + "." + ek.Value
					if ev.Kind != yaml.MappingNode || !looksLikeSecretRef(ev) {
						s.ps.add(s.at(ev), "%s: an agent env value must be a secret reference {type: secret_ref, secretId: <credential>, version: latest}, not %s", epath, describeNoValue(ev))
						continue
					}
					s.checkSecretRef(ev, epath)
				}
				continue
			case credentialKeyRE().MatchString(key):
				if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" && strings.TrimSpace(v.Value) != "" {
					s.ps.add(s.at(v), "contains a raw credential at %s; use a secret reference {type: secret_ref, secretId: <credential>, version: latest}", path)
					continue
				}
				if v.Kind == yaml.MappingNode && !looksLikeSecretRef(v) {
					s.ps.add(s.at(v), "%s: a credential-named key must hold a secret reference {type: secret_ref, secretId: <credential>, version: latest}", path)
					continue
				}
			}
			s.scan(v, path)
		}
	}
}

// describeNoValue names a node's shape without repeating a (possibly secret) value.
func describeNoValue(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping without type/secretId"
	case yaml.SequenceNode:
		return "a sequence"
	}
	return "a plain " + strings.TrimPrefix(n.ShortTag(), "!!")
}

// looksLikeSecretRef reports whether a mapping intends to be a secret reference: it has
// a secretId key or a type key whose value mentions "secret".
func looksLikeSecretRef(n *yaml.Node) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch n.Content[i].Value {
		case "secretId":
			return true
		case "type":
			if strings.Contains(strings.ToLower(n.Content[i+1].Value), "secret") {
				return true
			}
		}
	}
	return false
}

func (s *payloadScanner) checkSecretRef(n *yaml.Node, where string) {
	var ref SecretRef
	have := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		have[k.Value] = true
		str := ""
		if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" {
			str = v.Value
		}
		switch k.Value {
		case "type":
			ref.Type = str
			if str != "secret_ref" {
				s.ps.add(s.at(v), "%s: secret reference type must be \"secret_ref\", got %s", where, quoteScalar(v))
			}
		case "secretId":
			ref.SecretID = str
			if str == "" {
				s.ps.add(s.at(v), "%s: secret reference secretId must be a declared credential name or a UUID", where)
			} else if !uuidRE().MatchString(str) && s.credentials[str] == nil {
				s.ps.add(s.at(v), "%s: secret reference secretId %q is neither a declared credential nor a UUID", where, str)
			} else if cr := s.credentials[str]; cr != nil && cr.Kind == CredentialKindLoginFile {
				s.ps.add(s.at(v), "%s: secret reference secretId %q is a login file, which is seeded into the agent's HOME and never bound to a variable (docs/secrets.md \"Login files\")", where, str)
			}
		case "version":
			ref.Version = str
			if str != "latest" {
				s.ps.add(s.at(v), "%s: secret reference version must be \"latest\", got %s", where, quoteScalar(v))
			}
		default:
			s.ps.add(s.at(k), "%s: unknown key %q in a secret reference (known keys: type, secretId, version)", where, k.Value)
		}
	}
	for _, k := range []string{"type", "secretId", "version"} {
		if !have[k] {
			s.ps.add(s.at(n), "%s: secret reference lacks %s", where, k)
		}
	}
}

func quoteScalar(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		return describeNoValue(n)
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return `"` + v + `"`
}
