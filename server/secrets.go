package server

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/controlplane/store"
	"github.com/agentproof/agentproof/redact"
)

func (s *Server) aead() (cipher.AEAD, error) {
	block, err := aes.NewCipher(s.master)
	if err != nil {
		return nil, fmt.Errorf("server: cipher: %w", err)
	}
	return cipher.NewGCM(block)
}

func secretAAD(company, id string, version int64) []byte {
	return []byte(company + "\x00" + id + "\x00" + strconv.FormatInt(version, 10))
}

// PutSecret seals value under the master key and stores it for company, returning
// its reference. Errors: company_missing, invalid_request (empty name, key or value),
// store errors.
func (s *Server) PutSecret(ctx context.Context, company string, req api.CreateSecretRequest) (api.SecretRef, error) {
	if _, err := s.company(company); err != nil {
		return api.SecretRef{}, err
	}
	var problems []string
	if strings.TrimSpace(req.Name) == "" {
		problems = append(problems, "name is required")
	}
	if strings.TrimSpace(req.Key) == "" {
		problems = append(problems, "key is required")
	}
	if req.Value == "" {
		problems = append(problems, "value is required")
	}
	kind := req.Kind
	switch kind {
	case "":
		kind = api.SecretKindEnv
	case api.SecretKindEnv:
	case api.SecretKindLoginFile:
		if len(req.Value) > api.MaxLoginFileBytes {
			problems = append(problems, fmt.Sprintf("a login_file value is at most %d bytes", api.MaxLoginFileBytes))
		}
	default:
		problems = append(problems, fmt.Sprintf("kind %q is not %s or %s", req.Kind, api.SecretKindEnv, api.SecretKindLoginFile))
	}
	if len(problems) > 0 {
		return api.SecretRef{}, invalid(strings.Join(problems, "; "))
	}
	idb := make([]byte, 12)
	if _, err := rand.Read(idb); err != nil {
		return api.SecretRef{}, err
	}
	id := "secret-" + hex.EncodeToString(idb)
	g, err := s.aead()
	if err != nil {
		return api.SecretRef{}, err
	}
	nonce := make([]byte, g.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return api.SecretRef{}, err
	}
	const version = 1
	sealed := store.SealedSecret{CompanyID: company, ID: id, Name: req.Name, Key: req.Key, Kind: string(kind), Version: version, Nonce: nonce,
		Ciphertext: g.Seal(nil, nonce, []byte(req.Value), secretAAD(company, id, version))}
	if err := s.inst.PutSecret(ctx, sealed); err != nil {
		return api.SecretRef{}, err
	}
	return api.SecretRef{Type: api.SecretRefType, SecretID: id, Version: "latest"}, nil
}

// ResolveSecret returns the value ref points to in company (for the heartbeat runner,
// in process only: no route returns a value). Only env secrets resolve: a login_file
// secret never enters an agent's environment or configuration (ResolveLoginFile).
// Errors: secret_missing, invalid_request (not a secret_ref of version latest, or a
// login file), decryption failure.
func (s *Server) ResolveSecret(ctx context.Context, company string, ref api.SecretRef) (string, error) {
	return s.resolve(ctx, company, ref, api.SecretKindEnv)
}

// ResolveLoginFile returns the value of the login_file secret ref points to in company,
// for seeding it into a company-scoped HOME (package loginfile); in process only.
// Errors as ResolveSecret; an env secret is invalid_request.
func (s *Server) ResolveLoginFile(ctx context.Context, company string, ref api.SecretRef) (string, error) {
	return s.resolve(ctx, company, ref, api.SecretKindLoginFile)
}

func (s *Server) resolve(ctx context.Context, company string, ref api.SecretRef, want api.SecretKind) (string, error) {
	if ref.Type != api.SecretRefType || ref.Version != "latest" || ref.SecretID == "" {
		return "", invalid("not a secret reference {type: secret_ref, secretId, version: latest}")
	}
	sec, ok, err := s.inst.Secret(ctx, company, ref.SecretID)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", &controlplane.Error{Code: controlplane.CodeSecretMissing, Message: fmt.Sprintf("secret %s does not exist in company %s", ref.SecretID, company)}
	}
	if got := api.SecretKind(sec.Kind); got != want {
		if got == api.SecretKindLoginFile {
			return "", invalid(fmt.Sprintf("secret %s is a login file: it is seeded into the agent's HOME by the fixture, never bound to an environment variable or configuration", ref.SecretID))
		}
		return "", invalid(fmt.Sprintf("secret %s is a %s secret, not a login file", ref.SecretID, got))
	}
	g, err := s.aead()
	if err != nil {
		return "", err
	}
	plain, err := g.Open(nil, sec.Nonce, sec.Ciphertext, secretAAD(company, sec.ID, sec.Version))
	if err != nil {
		return "", fmt.Errorf("server: secret %s does not decrypt under this instance's master key", sec.ID)
	}
	return string(plain), nil
}

// credentialWords mark a key as naming a credential (compared with its folded form,
// redact.FoldKey), beyond redact.SensitiveKey's exact names (so OPENAI_API_KEY,
// githubToken, dbPassword are credentials).
var credentialWords = []string{"apikey", "token", "secret", "password", "passwd", "credential", "privatekey", "accesskey", "auth"}

func credentialKey(k string) bool {
	if redact.SensitiveKey(k) {
		return true
	}
	n := redact.FoldKey(k)
	for _, w := range credentialWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// maxSecretRefProblems bounds the problems checkSecretRefs lists; the rest are counted.
const maxSecretRefProblems = 20

// checkSecretRefs verifies that payload (agent adapter config or environment config)
// holds credentials only as secret references of company that exist: a
// credential-named key must hold a SecretRef, no string may have a secret's shape, and
// every SecretRef must name a stored secret. It returns a secret_ref_required *Error
// listing the first maxSecretRefProblems problems (and how many more there are). Its
// cost is linear in the payload's size: the path of a value ($.env.OPENAI_API_KEY,
// $.args[2]) is kept as a stack of segments and spelled out only for a problem.
func (s *Server) checkSecretRefs(ctx context.Context, company string, payload json.RawMessage) error {
	if len(payload) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(payload, &v); err != nil {
		return invalid("payload is not valid JSON: " + err.Error())
	}
	var problems []string
	more := 0
	var segs []string // path segments below "$": ".key" or "[i]"
	report := func(msg string) {
		if len(problems) == maxSecretRefProblems {
			more++
			return
		}
		problems = append(problems, "$"+strings.Join(segs, "")+": "+msg)
	}
	var walk func(v any, credential bool)
	walk = func(v any, credential bool) {
		if ref, ok := asSecretRef(v); ok {
			sec, found, err := s.inst.Secret(ctx, company, ref.SecretID)
			switch {
			case err != nil || !found:
				report("secret " + ref.SecretID + " does not exist in this company")
			case api.SecretKind(sec.Kind) == api.SecretKindLoginFile:
				report("secret " + ref.SecretID + " is a login file: the fixture seeds it into the agent's HOME; it never enters agent or environment configuration")
			}
			return
		}
		switch t := v.(type) {
		case map[string]any:
			if credential {
				report("a credential must be a secret reference")
				return
			}
			for _, k := range slices.Sorted(maps.Keys(t)) {
				if redact.HasShape(k) {
					report("a key has the shape of a secret")
					continue
				}
				segs = append(segs, "."+k)
				walk(t[k], credentialKey(k))
				segs = segs[:len(segs)-1]
			}
		case []any:
			for i, c := range t {
				segs = append(segs, "["+strconv.Itoa(i)+"]")
				walk(c, credential)
				segs = segs[:len(segs)-1]
			}
		case string:
			if credential {
				report("a credential must be a secret reference, not a value")
			} else if redact.HasShape(t) {
				report("the value has the shape of a secret; store it with POST /secrets and pass its reference")
			}
		case nil, bool, float64:
			if credential && t != nil {
				report("a credential must be a secret reference")
			}
		}
	}
	walk(v, false)
	if more > 0 {
		problems = append(problems, fmt.Sprintf("and %d more", more))
	}
	if len(problems) > 0 {
		return &controlplane.Error{Code: controlplane.CodeSecretRefRequired, Message: strings.Join(problems, "; ")}
	}
	return nil
}

func asSecretRef(v any) (api.SecretRef, bool) {
	m, ok := v.(map[string]any)
	if !ok || m["type"] != api.SecretRefType {
		return api.SecretRef{}, false
	}
	id, _ := m["secretId"].(string)
	ver, _ := m["version"].(string)
	if len(m) != 3 || id == "" || ver != "latest" {
		return api.SecretRef{}, false
	}
	return api.SecretRef{Type: api.SecretRefType, SecretID: id, Version: ver}, true
}
