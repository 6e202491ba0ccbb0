// Command agentproof qualifies AI agent runners end to end. All behaviour lives in
// package internal/cli; this main only hands over the process's arguments and streams
// and exits with the code it returns. Importing internal/earlycmd makes the sandbox's
// init (`agentproof sandbox-init`, once per sandbox launch) run, and exit, during
// package initialisation, before the rest of the command line is initialised.
package main

import (
	"os"

	"github.com/agentproof/agentproof/internal/cli"
	_ "github.com/agentproof/agentproof/internal/earlycmd"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
