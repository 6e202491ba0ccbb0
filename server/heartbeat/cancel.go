package heartbeat

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
)

// IntentPrefix starts the durable id of every Stop intent: "native-cancellation:<uuid>".
const IntentPrefix = "native-cancellation:"

// LocalBoardActor is the board actor of the local trusted board: every caller holding
// the instance board token acts as this user (docs/harness.md, "Stop").
const LocalBoardActor = "local-board"

// Intent is a reserved Stop of one run (api.CancelIntent), stored durably in the run's
// record before the process is signalled.
type Intent = api.CancelIntent

// StopRequest is one call of the Stop API: RequestID is the cancellationRequestId as
// sent ("" when omitted); Actor the calling board actor; IdempotencyKey the request's
// Idempotency-Key ("" for none) and RequestSHA256 the SHA-256 of its body (both
// compared on a replay).
type StopRequest struct {
	RequestID      string
	Actor          string
	IdempotencyKey string
	RequestSHA256  string
}

// StopVerdict says what a Stop request does to a run.
type StopVerdict string

// Stop verdicts.
const (
	// StopReserve: no intent yet and the run is running: reserve the new intent, then
	// signal the process.
	StopReserve StopVerdict = "reserve"
	// StopJoin: the request repeats or joins the existing intent (same UUID from the
	// same actor, or an omitted id): nothing new is reserved or signalled.
	StopJoin StopVerdict = "join"
)

// ParseRequestID checks a cancellationRequestId: "" (omitted) is valid; anything else
// must be a UUID in its canonical 36-character form (any version). It returns the
// lower-case form. Error: *controlplane.Error controlplane.CodeCancellationRequestIDInvalid (HTTP 400).
func ParseRequestID(id string) (string, error) {
	if id == "" {
		return "", nil
	}
	u, err := uuid.Parse(id)
	if err != nil || len(id) != 36 {
		return "", &controlplane.Error{Code: controlplane.CodeCancellationRequestIDInvalid,
			Message: fmt.Sprintf("cancellationRequestId %q is not a UUID", clip(id, 64))}
	}
	return u.String(), nil
}

// DecideStop is the Stop API's decision for a run (docs/harness.md, "Stop"), taken under the run's lock: terminal says whether the run has finished;
// existing is its reserved intent (nil when none); req.RequestID must have passed
// ParseRequestID. It returns StopReserve with the intent to store (RequestedAt left
// for the caller; for an omitted id the intent gets newID as RequestID), StopJoin with
// the existing intent, or a *controlplane.Error with controlplane.CodeCancellationConflict:
//
//   - a terminal run: only the same correlated UUID from the same actor joins;
//   - a running run with an intent: the same UUID from the same actor joins, an omitted
//     id joins whatever was reserved; a different UUID, a UUID after an uncorrelated
//     Stop, or the same UUID from another actor is a conflict;
//   - a running run without an intent: reserve.
func DecideStop(terminal bool, existing *Intent, req StopRequest, newID func() string) (StopVerdict, Intent, error) {
	conflict := func(msg string) (StopVerdict, Intent, error) {
		return "", Intent{}, &controlplane.Error{Code: controlplane.CodeCancellationConflict, Message: msg}
	}
	if existing != nil {
		switch {
		case req.RequestID == "" && !terminal:
			return StopJoin, *existing, nil
		case req.RequestID == "":
			return conflict("the run is already terminal; a Stop without a cancellationRequestId cannot join its finished intent")
		case !existing.Correlated:
			return conflict("an earlier Stop without a cancellationRequestId is already reserved for this run")
		case existing.RequestID != req.RequestID:
			return conflict("a different cancellation intent is already reserved for this run")
		case existing.Actor != req.Actor:
			return conflict("this cancellation intent was reserved by another board actor")
		}
		return StopJoin, *existing, nil
	}
	if terminal {
		return conflict("the run is terminal and has no cancellation intent")
	}
	in := Intent{RequestID: req.RequestID, Correlated: req.RequestID != "", Actor: req.Actor}
	if !in.Correlated {
		in.RequestID = newID()
	}
	in.IntentID = IntentPrefix + in.RequestID
	return StopReserve, in, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
