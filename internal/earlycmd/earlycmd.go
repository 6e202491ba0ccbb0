// Package earlycmd runs agentproof's hidden per-launch commands — the sandbox's init
// (`agentproof sandbox-init …`, PID 1 of every sandbox launch) and run's process
// sentry (`agentproof process-sentry`) — during package initialisation, so that such
// a process pays the initialisation of only the packages those commands import, not
// that of the whole command line (its SQLite, schema, YAML, MCP and HTTP libraries:
// more than half of a bare start's CPU; docs/performance.md).
//
// Go initialises the packages of a program one at a time, each after every package it
// imports, picking among those whose imports are done the first by import path (the
// language specification's "Package initialization"). This package imports only what
// those commands need, so its init runs as soon as they are initialised, and exits
// the process when the command line is one of them; for any other command line it
// does nothing and the program initialises as usual. Only cmd/agentproof imports it
// (test binaries that double as agentproof dispatch from their TestMain, after
// raceexit). internal/cli dispatches the same commands for an in-process Main.
package earlycmd

import (
	"os"

	"github.com/agentproof/agentproof/environment/sandbox"
	"github.com/agentproof/agentproof/worker"
)

func init() {
	args := os.Args[1:]
	switch {
	case len(args) > 0 && args[0] == sandbox.InitCommand:
		os.Exit(sandbox.RunInit(args[1:], os.Stderr))
	case len(args) == 1 && args[0] == worker.SentryCommand:
		os.Exit(worker.RunSentry(os.Stdin, os.Stderr))
	}
}
