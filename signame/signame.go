// Package signame names signals as the kill(1) list spells them ("SIGTERM"). It is a
// leaf that imports only syscall and strconv, so that the sandbox's init (package
// environment/sandbox/initproc), which must start without initialising the rest of
// agentproof, can name the signal that ended an agent exactly as the worker does.
package signame

import (
	"strconv"
	"syscall"
)

var names = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGSYS: "SIGSYS",
}

// Of names s ("SIGTERM"), or "SIG<n>" for a signal without a name here.
func Of(s syscall.Signal) string {
	if n, ok := names[s]; ok {
		return n
	}
	return "SIG" + strconv.Itoa(int(s))
}
