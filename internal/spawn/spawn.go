// Package spawn starts child processes that must not outlive the rig
// process that started them: the probes of an agent, the stress-ng loads.
//
// Each child gets a parent-death signal (PR_SET_PDEATHSIG). Linux sends it
// when the *thread* that forked the child ends, not when the process does,
// and Go ends an OS thread whenever a goroutine locked to it exits. So every
// child is forked from one goroutine locked to its thread for the life of
// the process: the signal comes exactly when the process dies, even by
// kill -9.
package spawn

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

type request struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	once sync.Once
	reqs chan request
)

// thread forks every child. It never returns and never unlocks: its thread
// lives as long as the process.
func thread() {
	runtime.LockOSThread()
	for r := range reqs {
		r.done <- r.cmd.Start()
	}
}

// Start starts cmd (as exec.Cmd.Start does) so that it receives sig when
// this process dies. It keeps cmd's other SysProcAttr settings.
func Start(cmd *exec.Cmd, sig syscall.Signal) error {
	once.Do(func() {
		reqs = make(chan request)
		go thread()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = sig
	r := request{cmd: cmd, done: make(chan error, 1)}
	reqs <- r
	return <-r.done
}
