// Package earlycmd runs `agentproof sandbox-init` (PID 1 of every sandbox launch,
// package environment/sandbox/initproc) during package initialisation, so that such a
// process pays the initialisation of only the few standard packages init imports, not
// that of the whole command line (its SQLite, schema, YAML, MCP and HTTP libraries:
// most of a bare start's CPU; docs/performance.md).
//
// Go initialises the packages of a program one at a time, each after every package it
// imports, picking among those whose imports are done the first by import path (the
// language specification's "Package initialization"). This package imports only
// initproc, which imports no package that needs reflect, fmt or net, so its init runs
// before those — and everything that imports them — are initialised, and exits the
// process when the command line is sandbox-init; for any other command line it does
// nothing and the program initialises as usual. Only cmd/agentproof imports it (test
// binaries that double as agentproof dispatch from their TestMain, after raceexit);
// internal/cli dispatches the same command for an in-process Main.
package earlycmd

import (
	"os"

	"github.com/agentproof/agentproof/environment/sandbox/initproc"
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == initproc.Command {
		os.Exit(initproc.Run(os.Args[2:], os.Stderr))
	}
}
