package scriptedmodel

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// BenchmarkServe measures one streamed request end to end over real HTTP on 127.0.0.1
// (decode, decide, encode, log): the scripted model's share of a CLI turn. The body is
// padded to about 40 KB, the size of a Codex request.
func BenchmarkServe(b *testing.B) {
	pad := strings.Repeat("x", 40<<10)
	bodies := map[Format]string{
		FormatResponses: `{"stream":true,"input":[{"role":"developer","content":"` + pad + `"},{"role":"user","content":"go"}],"tools":` + codexTools + `}`,
		FormatChat:      `{"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"` + pad + `"},{"role":"user","content":"go"}],"tools":` + opencodeChat + `}`,
		FormatMessages:  `{"stream":true,"system":"` + pad + `","messages":[{"role":"user","content":"go"}],"tools":` + claudeTools + `}`,
	}
	paths := map[Format]string{FormatResponses: "/responses", FormatChat: "/chat/completions", FormatMessages: "/messages"}
	for _, f := range []Format{FormatResponses, FormatChat, FormatMessages} {
		b.Run(string(f), func(b *testing.B) {
			srv, err := New(Options{Script: mustScript(b, threeSteps), Log: io.Discard})
			if err != nil {
				b.Fatal(err)
			}
			r, err := srv.Listen("127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = r.Close(ctx)
			}()
			url := r.URL + paths[f]
			b.SetBytes(int64(len(bodies[f])))
			b.ResetTimer()
			for b.Loop() {
				resp, err := http.Post(url, "application/json", strings.NewReader(bodies[f]))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatal(fmt.Sprint(resp.StatusCode))
				}
			}
		})
	}
}
