// Command init is the static stand-in for the agentproof executable in the container
// provider's tests (the race-enabled test binary is dynamically linked, so it cannot be
// a container's init): `init sandbox-init …` is the real init, `init hostile …` the
// real hostile agent.
package main

import (
	"fmt"
	"os"

	"github.com/agentproof/agentproof/agent/hostile"
	"github.com/agentproof/agentproof/environment/sandbox"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case sandbox.InitCommand:
			os.Exit(sandbox.RunInit(os.Args[2:], os.Stderr))
		case "hostile":
			os.Exit(hostile.Run(os.Args[2:], os.Stdout, os.Stderr))
		case "version":
			fmt.Println("agentproof test init")
			os.Exit(0)
		}
	}
	fmt.Fprintln(os.Stderr, "usage: init sandbox-init|hostile|version …")
	os.Exit(64)
}
