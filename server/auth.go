package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/agentproof/agentproof/controlplane"
)

// agentTokenPrefix starts every agent token: "apr1.<claims>.<mac>", both parts
// base64url without padding; mac = HMAC-SHA256(tokenKey, "apr1." + claims).
const agentTokenPrefix = "apr1."

// AgentClaims are what an agent token is bound to: the instance company id, the actor
// and the run.
type AgentClaims struct {
	Company string `json:"c"`
	Actor   string `json:"a"`
	Run     string `json:"r"`
}

// MintAgentToken returns a bearer token for agent routes bound to (company, actor,
// run): the heartbeat runner mints one per run. A token for one company or run gets
// 403 on another's resources.
//
// Minting starts the run's agent-call ledger (calls.go): every request of the token
// to this process is then recorded, so the ledger is complete (Recorded) even when the
// agent makes no call at all.
func (s *Server) MintAgentToken(company, actor, run string) string {
	s.calls.register(company, run)
	claims, _ := json.Marshal(AgentClaims{Company: company, Actor: actor, Run: run})
	body := agentTokenPrefix + base64.RawURLEncoding.EncodeToString(claims)
	mac := hmac.New(sha256.New, s.tokenKey)
	mac.Write([]byte(body))
	return body + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// parseAgentToken verifies tok and returns its claims.
func (s *Server) parseAgentToken(tok string) (AgentClaims, bool) {
	if !strings.HasPrefix(tok, agentTokenPrefix) {
		return AgentClaims{}, false
	}
	i := strings.LastIndexByte(tok, '.')
	if i <= len(agentTokenPrefix) {
		return AgentClaims{}, false
	}
	body, sig := tok[:i], tok[i+1:]
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return AgentClaims{}, false
	}
	mac := hmac.New(sha256.New, s.tokenKey)
	mac.Write([]byte(body))
	if !hmac.Equal(got, mac.Sum(nil)) {
		return AgentClaims{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(body[len(agentTokenPrefix):])
	if err != nil {
		return AgentClaims{}, false
	}
	var c AgentClaims
	if err := json.Unmarshal(raw, &c); err != nil || c.Company == "" || c.Run == "" || c.Actor == "" {
		return AgentClaims{}, false
	}
	return c, true
}

// principal is who is calling: the board (every route) or an agent (its run's routes).
// ended is the status of the agent token's run once it ended ("" while it runs).
type principal struct {
	board bool
	agent AgentClaims
	ended controlplane.RunStatus
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// authenticate returns the caller, or a 401 error.
func (s *Server) authenticate(r *http.Request) (principal, error) {
	tok := bearer(r)
	if tok == "" {
		return principal{}, errUnauthorized("a bearer token is required")
	}
	if subtle.ConstantTimeCompare([]byte(tok), []byte(s.boardToken)) == 1 {
		return principal{board: true}, nil
	}
	if c, ok := s.parseAgentToken(tok); ok {
		return principal{agent: c}, nil
	}
	return principal{}, errUnauthorized("the bearer token is not valid")
}

// runLive looks up the run an agent token is bound to and returns p with ended set
// to the run's status when the run is no longer running. A token whose company or run
// does not exist is 401 unauthorized: an agent token is valid only for its own run, and
// only while the run runs (afterwards wrap refuses it with errRunEnded).
func (s *Server) runLive(ctx context.Context, p principal) (principal, error) {
	c := s.inst.Company(p.agent.Company)
	if c == nil {
		return p, errUnauthorized("the agent token's company does not exist")
	}
	running, status, err := c.RunRunning(ctx, p.agent.Run)
	if controlplane.CodeOf(err) == controlplane.CodeRunMissing {
		return p, errUnauthorized("the agent token's run " + p.agent.Run + " does not exist")
	}
	if err != nil {
		return p, err
	}
	if !running {
		p.ended = status
	}
	return p, nil
}

// errRunEnded is the 401 of an agent token whose run ended.
func errRunEnded(p principal) error {
	return errUnauthorized("the agent token expired: run " + p.agent.Run + " ended (" + string(p.ended) + ")")
}

func errUnauthorized(msg string) error {
	return &controlplane.Error{Code: controlplane.CodeUnauthorized, Message: msg}
}

func errForbidden(msg string) error {
	return &controlplane.Error{Code: controlplane.CodeForbidden, Message: msg}
}

// mayAct checks that p may act on run of company: the board always, an agent only on
// its own company and run.
func (p principal) mayAct(company, run string) error {
	if p.board {
		return nil
	}
	if p.agent.Company != company {
		return errForbidden("the agent token belongs to another company")
	}
	if p.agent.Run != run {
		return errForbidden("the agent token belongs to another run")
	}
	return nil
}
