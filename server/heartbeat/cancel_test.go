package heartbeat_test

import (
	"testing"

	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/server/heartbeat"
)

const (
	uuidA = "0b6f1c0e-2f0a-4c57-9a39-3f2b8f6d2a11"
	uuidB = "7d1e4a52-9b1c-4e0f-8d2a-5c6b7a8e9f00"
	drawn = "11111111-2222-4333-8444-555555555555"
)

// TestDecideStop is the Stop API's decision table (docs/harness.md, "Stop").
func TestDecideStop(t *testing.T) {
	t.Parallel()
	correlated := &heartbeat.Intent{IntentID: heartbeat.IntentPrefix + uuidA, RequestID: uuidA, Correlated: true, Actor: "local-board"}
	uncorrelated := &heartbeat.Intent{IntentID: heartbeat.IntentPrefix + drawn, RequestID: drawn, Actor: "local-board"}
	tests := []struct {
		name     string
		terminal bool
		existing *heartbeat.Intent
		req      heartbeat.StopRequest
		verdict  heartbeat.StopVerdict
		request  string // RequestID of the resulting intent
		corr     bool
		conflict bool
	}{
		{"running, no intent, UUID: reserve", false, nil, heartbeat.StopRequest{RequestID: uuidA, Actor: "local-board"}, heartbeat.StopReserve, uuidA, true, false},
		{"running, no intent, omitted: reserve uncorrelated", false, nil, heartbeat.StopRequest{Actor: "local-board"}, heartbeat.StopReserve, drawn, false, false},
		{"same UUID, same actor: idempotent", false, correlated, heartbeat.StopRequest{RequestID: uuidA, Actor: "local-board"}, heartbeat.StopJoin, uuidA, true, false},
		{"same UUID, other actor: conflict", false, correlated, heartbeat.StopRequest{RequestID: uuidA, Actor: "user-2"}, "", "", false, true},
		{"different UUID: conflict", false, correlated, heartbeat.StopRequest{RequestID: uuidB, Actor: "local-board"}, "", "", false, true},
		{"omitted id joins the reserved intent", false, correlated, heartbeat.StopRequest{Actor: "user-2"}, heartbeat.StopJoin, uuidA, true, false},
		{"UUID after an uncorrelated Stop: conflict", false, uncorrelated, heartbeat.StopRequest{RequestID: uuidA, Actor: "local-board"}, "", "", false, true},
		{"omitted after an uncorrelated Stop joins", false, uncorrelated, heartbeat.StopRequest{Actor: "local-board"}, heartbeat.StopJoin, drawn, false, false},
		{"terminal without intent: conflict", true, nil, heartbeat.StopRequest{RequestID: uuidA, Actor: "local-board"}, "", "", false, true},
		{"terminal without intent, omitted: conflict", true, nil, heartbeat.StopRequest{Actor: "local-board"}, "", "", false, true},
		{"terminal with the same intent: idempotent", true, correlated, heartbeat.StopRequest{RequestID: uuidA, Actor: "local-board"}, heartbeat.StopJoin, uuidA, true, false},
		{"terminal with the same intent, other actor: conflict", true, correlated, heartbeat.StopRequest{RequestID: uuidA, Actor: "user-2"}, "", "", false, true},
		{"terminal with another intent: conflict", true, correlated, heartbeat.StopRequest{RequestID: uuidB, Actor: "local-board"}, "", "", false, true},
		{"terminal, omitted id: conflict", true, correlated, heartbeat.StopRequest{Actor: "local-board"}, "", "", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, in, err := heartbeat.DecideStop(tc.terminal, tc.existing, tc.req, func() string { return drawn })
			if tc.conflict {
				if controlplane.CodeOf(err) != controlplane.CodeCancellationConflict {
					t.Fatalf("got %v %+v %v, want %s", v, in, err, controlplane.CodeCancellationConflict)
				}
				return
			}
			if err != nil || v != tc.verdict || in.RequestID != tc.request || in.Correlated != tc.corr || in.IntentID != heartbeat.IntentPrefix+tc.request {
				t.Fatalf("got %v %+v %v, want %v with request %s (correlated %v)", v, in, err, tc.verdict, tc.request, tc.corr)
			}
		})
	}
}

func TestParseRequestID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		code     controlplane.Code
	}{
		{"", "", ""},
		{uuidA, uuidA, ""},
		{"0B6F1C0E-2F0A-4C57-9A39-3F2B8F6D2A11", uuidA, ""},
		{"not-a-uuid", "", controlplane.CodeCancellationRequestIDInvalid},
		{"{" + uuidA + "}", "", controlplane.CodeCancellationRequestIDInvalid},
		{"urn:uuid:" + uuidA, "", controlplane.CodeCancellationRequestIDInvalid},
		{"0b6f1c0e2f0a4c579a393f2b8f6d2a11", "", controlplane.CodeCancellationRequestIDInvalid},
		{uuidA + " ", "", controlplane.CodeCancellationRequestIDInvalid},
	}
	for _, tc := range tests {
		got, err := heartbeat.ParseRequestID(tc.in)
		if controlplane.CodeOf(err) != tc.code || got != tc.want {
			t.Errorf("ParseRequestID(%q) = %q, %v; want %q, code %q", tc.in, got, err, tc.want, tc.code)
		}
	}
}

// FuzzParseRequestID: untrusted input either parses to a canonical 36-character UUID
// that parses to itself, or is refused with the 400 code.
func FuzzParseRequestID(f *testing.F) {
	for _, s := range []string{"", uuidA, "not-a-uuid", "{" + uuidB + "}", "urn:uuid:" + uuidA} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := heartbeat.ParseRequestID(s)
		if err != nil {
			if controlplane.CodeOf(err) != controlplane.CodeCancellationRequestIDInvalid {
				t.Fatalf("error %v has the wrong code", err)
			}
			return
		}
		if s == "" {
			return
		}
		if len(got) != 36 {
			t.Fatalf("%q parsed to %q", s, got)
		}
		if again, err := heartbeat.ParseRequestID(got); err != nil || again != got {
			t.Fatalf("%q is not stable: %q, %v", got, again, err)
		}
	})
}
