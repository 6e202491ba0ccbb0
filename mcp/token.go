package mcp

import (
	"encoding/base64"
	"encoding/json"
	"strings"
)

// RunIDFromToken reads the run id out of an agent token ("apr1.<claims>.<mac>", claims
// base64url JSON {"c","a","r"}, see package server) without verifying it — the server
// does that on every call. ok is false for anything else.
func RunIDFromToken(token string) (runID string, ok bool) {
	rest, found := strings.CutPrefix(token, "apr1.")
	if !found {
		return "", false
	}
	claims, _, found := strings.Cut(rest, ".")
	if !found {
		return "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(claims)
	if err != nil {
		return "", false
	}
	var c struct {
		Run string `json:"r"`
	}
	if json.Unmarshal(raw, &c) != nil || strings.TrimSpace(c.Run) == "" {
		return "", false
	}
	return c.Run, true
}
