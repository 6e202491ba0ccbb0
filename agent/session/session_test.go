package session_test

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/worker"
)

// fakeProtocol is a protocol whose wire is the test itself: the agent process is cat
// (a real process the layer starts, watches and retires), and the connection does
// what the test's prompt function says, reporting through the layer's Host.
type fakeProtocol struct {
	prompt func(c *fakeConn, ctx context.Context, t session.Turn) error
	steer  bool
}

var fakeDescription = session.Protocol{Name: "Fake", LogSchema: "agentproof.fake-log/v1", Evidence: "fake-turn",
	Classify: func([]byte) session.WireLine { return session.WireLine{} }, Completed: "done", Cancelled: "cancelled", CancelName: "the fake cancel"}

func (p *fakeProtocol) Protocol() session.Protocol { return fakeDescription }

func (p *fakeProtocol) Open(_ context.Context, _ io.ReadWriter, h session.Host) (session.Conn, error) {
	c := &fakeConn{p: p, h: h, done: make(chan struct{}), cancelled: make(chan struct{}, 8)}
	if p.steer {
		return &steerConn{c}, nil
	}
	return c, nil
}

type fakeConn struct {
	p         *fakeProtocol
	h         session.Host
	done      chan struct{}
	cancelled chan struct{}

	mu    sync.Mutex
	order []string
}

func (c *fakeConn) note(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order = append(c.order, s)
}

func (c *fakeConn) Info() session.Info { return session.Info{SessionID: "fake-1"} }
func (c *fakeConn) Prompt(ctx context.Context, t session.Turn) error {
	return c.p.prompt(c, ctx, t)
}

func (c *fakeConn) Cancel(context.Context) error {
	c.note("cancel")
	c.cancelled <- struct{}{}
	return nil
}
func (c *fakeConn) Done() <-chan struct{} { return c.done }
func (c *fakeConn) Close() error          { return nil }

// steerConn is a fakeConn that can steer: the message arrives as a user message.
type steerConn struct{ *fakeConn }

func (c *steerConn) Steer(_ context.Context, text string) error {
	c.h.Update(func(r session.Recorder) { r.UserMessage(text) })
	return nil
}

// start starts a fake session (cat) with perms and bounds.
func start(t *testing.T, p *fakeProtocol, perms session.PermissionDecider, b session.Bounds) *session.Session {
	t.Helper()
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	dir := t.TempDir()
	cat, _ = filepath.Abs(cat)
	l := session.Launch{Index: 1, Dir: filepath.Join(dir, "s1"), CloseGrace: session.CloseGrace,
		Spec: worker.Spec{Path: cat, Args: []string{"cat"}, Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}, Timeout: time.Minute, MaxOutputBytes: 1 << 20}}
	if b.Start == 0 {
		b.Start = 10 * time.Second
	}
	s, err := session.Start(context.Background(), p, l, session.Env{RunID: "run-1", RunToken: "tok-0123456789abcdef", Permissions: perms, Bounds: b})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// end ends a turn with stop reason reason.
func end(c *fakeConn, reason string) {
	c.h.Update(func(r session.Recorder) {
		r.AppendMessage("bye")
		r.Stop(reason, "")
		r.End()
	})
}

// TestDeadlineCancelsThenGivesUp: a turn that never ends gets the protocol's cancel at
// the deadline and, when it still does not end within the cancel grace, fails
// timed_out and breaks the session (the next prompt is misuse).
func TestDeadlineCancelsThenGivesUp(t *testing.T) {
	t.Parallel()
	p := &fakeProtocol{prompt: func(_ *fakeConn, ctx context.Context, _ session.Turn) error { <-ctx.Done(); return ctx.Err() }}
	s := start(t, p, session.Approve, session.Bounds{Turn: 50 * time.Millisecond, CancelGrace: 50 * time.Millisecond})
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "go"})
	var te *session.TurnError
	if !errors.As(err, &te) || te.Failure != session.TurnTimedOut || !res.CancelRequested || res.Ended {
		t.Fatalf("Prompt = %+v, %v; want timed_out after a cancel", res, err)
	}
	if _, err := s.Prompt(context.Background(), session.Turn{RunID: "run-2", Text: "again"}); !errors.As(err, &te) || te.Failure != session.TurnMisuse {
		t.Errorf("a prompt on the broken session: %v, want misuse", err)
	}
	if s.Alive() {
		t.Error("a broken session is alive")
	}
}

// TestStopWhilePermissionPending: Stop sends the protocol's cancel first, then answers
// the pending request "cancelled" (the decider's context ends); the request keeps its
// what and its times; the turn honours the cancel.
func TestStopWhilePermissionPending(t *testing.T) {
	t.Parallel()
	hold := session.NewHoldDecider(1)
	var dec session.PermissionDecision
	var conn *fakeConn
	p := &fakeProtocol{prompt: func(c *fakeConn, _ context.Context, _ session.Turn) error {
		conn = c
		dec = c.h.Permission(context.Background(), session.PermissionRequest{ToolCallID: "call-1", Kind: "execute", Command: "touch ran.txt",
			Locations: []string{"/ws/ran.txt"}, Options: []session.PermissionOption{{ID: "y", Kind: session.PermissionAllowOnce}, {ID: "n", Kind: session.PermissionRejectOnce}}})
		c.note("answered")
		<-c.cancelled
		end(c, "cancelled")
		return nil
	}}
	s := start(t, p, hold, session.Bounds{Turn: time.Minute, CancelGrace: time.Second})
	go func() {
		<-hold.Pending
		_ = s.Cancel("the human pressed Stop")
	}()
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "go"})
	if err != nil || !dec.Cancelled || !res.CancelHonoured || res.StopReason != "cancelled" || res.Message != "bye" {
		t.Fatalf("Prompt = %+v, %v (decision %+v)", res, err, dec)
	}
	if len(res.Permissions) != 1 {
		t.Fatalf("permissions %+v, want one", res.Permissions)
	}
	rec := res.Permissions[0]
	if rec.By != session.AnsweredByCancel || rec.Request.Seq != 1 || rec.Request.RunID != "run-1" || rec.Request.Command != "touch ran.txt" ||
		rec.RequestedAt.IsZero() || rec.AnsweredAt.Before(rec.RequestedAt) {
		t.Errorf("permission record %+v", rec)
	}
	if !slices.Equal(conn.order, []string{"cancel", "answered"}) {
		t.Errorf("order %v, want the protocol's cancel before the pending answer", conn.order)
	}
}

// TestDeciderChoosesWhatIsNotOffered: an option the request does not offer is the
// harness's fault: the agent is told "cancelled", the turn records the error.
func TestDeciderChoosesWhatIsNotOffered(t *testing.T) {
	t.Parallel()
	yolo := session.DeciderFunc(func(context.Context, session.PermissionRequest) (session.PermissionDecision, error) {
		return session.PermissionDecision{OptionID: "yolo"}, nil
	})
	p := &fakeProtocol{prompt: func(c *fakeConn, _ context.Context, _ session.Turn) error {
		c.h.Permission(context.Background(), session.PermissionRequest{Options: []session.PermissionOption{{ID: "y", Kind: session.PermissionAllowOnce}}})
		end(c, "done")
		return nil
	}}
	s := start(t, p, yolo, session.Bounds{Turn: time.Minute, CancelGrace: time.Second})
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "go"})
	if err != nil || len(res.Permissions) != 1 || res.Permissions[0].By != session.AnsweredByError || !res.Permissions[0].Decision.Cancelled ||
		len(res.HarnessErrors) != 1 || !strings.Contains(res.HarnessErrors[0], "yolo") {
		t.Errorf("Prompt = %+v, %v", res, err)
	}
}

// TestCancelNotHonoured: a turn that ends with another stop reason after the cancel is
// a protocol violation naming the protocol's cancel.
func TestCancelNotHonoured(t *testing.T) {
	t.Parallel()
	p := &fakeProtocol{prompt: func(c *fakeConn, _ context.Context, _ session.Turn) error {
		<-c.cancelled
		end(c, "done")
		return nil
	}}
	s := start(t, p, session.Approve, session.Bounds{Turn: time.Minute, CancelGrace: time.Second})
	ctx, stop := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); stop() }()
	res, err := s.Prompt(ctx, session.Turn{RunID: "run-1", Text: "go"})
	if err != nil || res.CancelHonoured || len(res.ProtocolViolations) != 1 || !strings.Contains(res.ProtocolViolations[0], "the fake cancel") {
		t.Errorf("Prompt = %+v, %v", res, err)
	}
}

// TestSteeringIsACapability: a protocol without it refuses (ErrUnsupported); one with
// it records the delivery, accepted and delivered.
func TestSteeringIsACapability(t *testing.T) {
	t.Parallel()
	hold := func(c *fakeConn, ctx context.Context, _ session.Turn) error {
		<-c.cancelled
		end(c, "cancelled")
		return nil
	}
	plain := start(t, &fakeProtocol{prompt: hold}, session.Approve, session.Bounds{Turn: time.Minute, CancelGrace: time.Second})
	if plain.Steerable() || !errors.Is(plain.Steer(context.Background(), "x"), session.ErrUnsupported) {
		t.Error("a protocol without steering steered")
	}
	s := start(t, &fakeProtocol{prompt: hold, steer: true}, session.Approve, session.Bounds{Turn: time.Minute, CancelGrace: time.Second})
	go func() {
		for s.Steer(context.Background(), "turn left") != nil {
			time.Sleep(5 * time.Millisecond)
		}
		_ = s.Cancel("done steering")
	}()
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "go"})
	if err != nil || len(res.Steers) != 1 || !res.Steers[0].Accepted || !res.Steers[0].Delivered || !slices.Equal(res.UserMessages, []string{"turn left"}) {
		t.Errorf("Prompt = %+v, %v", res, err)
	}
}

// TestStreamEndIsAgentGone: a connection whose stream ends fails the turn agent_gone
// and breaks the session.
func TestStreamEndIsAgentGone(t *testing.T) {
	t.Parallel()
	p := &fakeProtocol{prompt: func(c *fakeConn, ctx context.Context, _ session.Turn) error {
		close(c.done)
		<-ctx.Done()
		return ctx.Err()
	}}
	s := start(t, p, session.Approve, session.Bounds{Turn: time.Minute, CancelGrace: time.Second})
	_, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "go"})
	var te *session.TurnError
	if !errors.As(err, &te) || te.Failure != session.TurnAgentGone || s.Alive() {
		t.Errorf("err = %v, want agent_gone and a broken session", err)
	}
}
