package main

import (
	"context"

	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/responder"
)

// respondEngine is what rig respond needs of a responder, whichever engine
// runs its loop (responder.Responder, responder.Native).
type respondEngine interface {
	Granted() tstamp.Granted
	ThreadID() int
	Run(context.Context) error
	Counters() samples.Counters
	Thread() *samples.ThreadUsage
	WriteFile(path string, arm, round int) error
	Close() error
}

// findEngine finds the native engine's program when f asks for it ("" for
// the Go engine): a missing one is refused before the NIC is touched.
func findEngine(f probe.Respond) (string, error) {
	if f.Engine != probe.EngineNative {
		return "", nil
	}
	return native.Find(responder.NativeProgram)
}

// newResponder sets up the Go engine's responder, or with prog the native
// engine's, logging what its setup could not check.
func newResponder(prog string, f probe.Respond, o responder.Options) (respondEngine, error) {
	if prog == "" {
		r, err := responder.New(f, o)
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	n, err := responder.NewNative(f, o, prog)
	if err != nil {
		return nil, err
	}
	e := &nativeEngine{Native: n}
	e.log()
	return e, nil
}

// nativeEngine logs what the native engine noted, at setup and after Run.
type nativeEngine struct {
	*responder.Native
	logged int
}

func (e *nativeEngine) log() {
	for _, s := range e.Notes()[e.logged:] {
		logf("rig respond: warning: %s", s)
	}
	e.logged = len(e.Notes())
}

func (e *nativeEngine) Run(ctx context.Context) error {
	defer e.log()
	return e.Native.Run(ctx)
}
