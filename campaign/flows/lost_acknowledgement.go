package flows

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
)

func init() {
	register(Flow{
		FlowContract:  catalog.FlowContract{Name: "lost_acknowledgement", Needs: []catalog.Need{{Field: catalog.FieldFollowups, Count: 1, What: "the comment whose acknowledgement is lost"}}},
		Play:          playLostAcknowledgement,
		ServerProcess: restartsOrCrashes,
	})
}

// playLostAcknowledgement is flow lost_acknowledgement (the lost-acknowledgement
// probe; docs/files.md "Idempotent board writes"): run 1 must submit the task for review; the human posts the case's
// follow-up as a keyed board comment through a loopback proxy that forwards the
// request, lets the server commit it and drops the response; the human sees the
// comment committed without an acknowledgement, waits for run 2 (the agent's answer
// to the follow-up), restarts the server and replays the same request with the same
// Idempotency-Key through the public API. The board must answer the replay with the
// original comment id and hold exactly one comment with that body; a board that does
// not is a harness fault (the control plane is agentproof's own), never the
// candidate's. The request id (the key) and both ids go to the flow log.
func playLostAcknowledgement(ctx context.Context, s *Session) Outcome {
	var out Outcome
	v := out.wait(ctx, s, 1)
	if v == nil {
		return out
	}
	if v.task == nil || v.task.Status != controlplane.TaskInReview {
		out.Problems = append(out.Problems, "turn 1 was not submitted for review")
		return out
	}
	body, err := s.followup()
	if err != nil {
		out.Err = err
		return out
	}
	if s.ServerURL == nil || s.BoardAt == nil || s.Restart == nil {
		out.Err = permanent(errors.New("flow lost_acknowledgement needs a harness that can address and restart the server; this one cannot"))
		return out
	}
	key := "lost-ack-" + s.Rendered.Nonce
	in, err := json.Marshal(map[string]string{"issueId": s.TaskID, "body": body})
	if err != nil {
		out.Err = permanent(err)
		return out
	}
	op := controlplane.BoardOp{Kind: controlplane.BoardComment, Input: in, IdempotencyKey: key}

	proxy, err := startLossyProxy(s.ServerURL())
	if err != nil {
		out.Err = permanent(fmt.Errorf("starting the lossy proxy: %w", err))
		return out
	}
	out.submit()
	s.log("request %s: posting the follow-up through the lossy proxy %s", key, proxy.url)
	res, werr := s.BoardAt(proxy.url).ApplyBoard(ctx, op)
	seen := proxy.close()
	if werr == nil {
		out.Err = permanent(fmt.Errorf("request %s: the lossy proxy did not drop the response (comment %s acknowledged)", key, res.ID))
		return out
	}
	if len(seen) != 1 || seen[0].status != http.StatusOK && seen[0].status != http.StatusCreated || seen[0].id == "" {
		out.Err = permanent(fmt.Errorf("request %s: the proxy forwarded %d requests (%+v), want one the server committed", key, len(seen), seen))
		return out
	}
	original := seen[0].id
	s.log("request %s: the server committed comment %s (HTTP %d); its response was dropped, the client saw: %v", key, original, seen[0].status, werr)

	if _, out.Err = waitTurn(ctx, s, 2); out.Err != nil {
		return out
	}
	if out.Err = restart(ctx, s, "before replaying request "+key); out.Err != nil {
		return out
	}
	replay, err := s.Board.ApplyBoard(ctx, op)
	if err != nil {
		out.Err = BoardFault("replaying request "+key, err)
		return out
	}
	s.log("request %s: the replay after the restart answered comment %s", key, replay.ID)
	if replay.ID != original {
		out.Err = permanent(fmt.Errorf("request %s: the replay answered comment %s, not the committed %s (the board is not idempotent)", key, replay.ID, original))
		return out
	}
	if v = out.wait(ctx, s, 2); v == nil {
		return out
	}
	var ids []string
	for _, c := range v.st.Comments {
		if c.TaskID == s.TaskID && c.Body == body {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) != 1 || ids[0] != original {
		out.Err = permanent(fmt.Errorf("request %s: the board holds comments %v with the follow-up's body, want exactly %s", key, ids, original))
	}
	return out
}

// proxied is what the lossy proxy saw of one forwarded request: the server's status
// and the id of its board result ("" when it had none).
type proxied struct {
	status int
	id     string
}

// lossyProxy is a loopback HTTP proxy in the harness: it forwards every request to
// the target server, reads the server's whole response (so the write is committed)
// and then closes the client's connection without writing a byte of it — a lost
// acknowledgement.
type lossyProxy struct {
	url  string
	srv  *http.Server
	mu   sync.Mutex
	seen []proxied
}

// maxProxiedResponse bounds the response the proxy reads (bytes).
const maxProxiedResponse = 1 << 20

func startLossyProxy(target string) (*lossyProxy, error) {
	to, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &lossyProxy{url: "http://" + ln.Addr().String()}
	upstream := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	p.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(io.LimitReader(r.Body, maxProxiedResponse))
		if err != nil {
			return
		}
		u := *to
		u.Path, u.RawQuery = r.URL.Path, r.URL.RawQuery
		req, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(b))
		if err != nil {
			return
		}
		req.Header = r.Header.Clone()
		seen := proxied{}
		if resp, err := upstream.Do(req); err == nil {
			rb, _ := io.ReadAll(io.LimitReader(resp.Body, maxProxiedResponse))
			resp.Body.Close()
			var res controlplane.BoardResult
			_ = json.Unmarshal(rb, &res)
			seen = proxied{status: resp.StatusCode, id: res.ID}
		}
		p.mu.Lock()
		p.seen = append(p.seen, seen)
		p.mu.Unlock()
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler) // drops the connection without a response
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// close stops the proxy and returns what it forwarded.
func (p *lossyProxy) close() []proxied {
	_ = p.srv.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen
}
