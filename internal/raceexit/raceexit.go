// Package raceexit takes away the race detector's one-second sleep at a successful exit
// from test binaries that double as agentproof's child processes.
//
// A program built with -race that exits with status 0 sleeps for GORACE's
// atexit_sleep_ms (1000 by default) before it exits, so that reports of races still
// being detected elsewhere get printed. A test binary that the code under test starts as
// a child (a built-in agent, a fixture program, an `agentproof serve` instance, a fake
// agent CLI, the MCP server of a real CLI) is started with an explicit environment
// without GORACE, so every such child that succeeds takes a second longer to exit than
// it does in a real build: the harness waits for that second after every agent run, and
// a grace measured from a child's last output line to its exit (a CLI's result grace)
// is always overrun when it is a second or less.
//
// Main, called first in such a TestMain, restarts the process once (execve, same pid,
// same argv, same open files) with GORACE=atexit_sleep_ms=0 and then removes GORACE
// from its environment again, so that the code under test and the children it starts
// see the environment they were given. Race reports and the exit status 66 of a process
// that found a race are unchanged. In a build without -race it does nothing.
package raceexit
