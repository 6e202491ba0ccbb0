// Command floor is the smallest Go program that does what a fixture agent process
// does over the network: three JSON POSTs to a local HTTP server, each answer decoded.
// bench/floor.sh builds it (static, stripped) and measures the CPU of one start of it
// beside one start of agentproof, to show what a per-cell agent process costs at
// least on a machine (docs/performance.md "The floor"). It is not part of agentproof.
//
//	floor serve       # serves JSON on 127.0.0.1, prints its URL, runs until killed
//	floor post URL    # three POSTs to URL; exit 1 on any error
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	switch {
	case len(os.Args) == 2 && os.Args[1] == "serve":
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("http://%s/\n", l.Addr())
		_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var v any
			_ = json.NewDecoder(r.Body).Decode(&v)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ok":true}`))
		}))
	case len(os.Args) == 3 && os.Args[1] == "post":
		body, _ := json.Marshal(map[string]string{"body": "FLOOR-MARKER"})
		for range 3 {
			r, err := http.Post(os.Args[2], "application/json", bytes.NewReader(body))
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			var v any
			err = json.NewDecoder(r.Body).Decode(&v)
			_ = r.Body.Close()
			if err != nil || r.StatusCode != http.StatusOK {
				fmt.Fprintln(os.Stderr, "bad answer:", r.Status, err)
				os.Exit(1)
			}
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: floor serve | floor post URL")
		os.Exit(2)
	}
}
