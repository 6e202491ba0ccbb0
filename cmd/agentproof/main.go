// Command agentproof qualifies AI agent runners end to end. All behaviour lives in
// package internal/cli; this main only hands over the process's arguments and streams
// and exits with the code it returns.
package main

import (
	"os"

	"github.com/agentproof/agentproof/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
