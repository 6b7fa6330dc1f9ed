package responder

import (
	"context"

	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
)

// Engine is what runs rig respond's loop, whichever engine --engine
// chose: a *Responder, a *Native or a *Reflect.
type Engine interface {
	Granted() tstamp.Granted
	ThreadID() int
	Run(context.Context) error
	Counters() samples.Counters
	Thread() *samples.ThreadUsage
	WriteFile(path string, arm, round int) error
	Close() error
}

// FindEngine finds the native engine's program when cfg asks for it (""
// for the Go engine), and checks its stack on this host: a missing one is
// refused (os.ErrNotExist, or a *native.Refusal with the stack's install
// hint) before anything is set up.
func FindEngine(cfg probe.Respond) (string, error) {
	if cfg.Engine != probe.EngineNative {
		return "", nil
	}
	if _, err := native.StackLaunch(cfg.Stack); err != nil {
		return "", err
	}
	return native.Find(native.RespondProgram)
}

// Open sets up the Go engine's responder, or with prog (FindEngine) the
// native engine's; o.Note hears what the native engine's setup and run
// could not check or do.
func Open(cfg probe.Respond, o Options, prog string) (Engine, error) {
	if cfg.Engine.Reflector() {
		r, err := NewReflect(cfg, o)
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	if prog == "" {
		r, err := New(cfg, o)
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	n, err := NewNative(cfg, o, prog)
	if err != nil {
		return nil, err
	}
	e := &noted{Native: n, note: o.Note}
	e.tell()
	return e, nil
}

// noted tells what the native engine noted, at setup and after Run.
type noted struct {
	*Native
	note func(string)
	told int
}

func (e *noted) tell() {
	for _, s := range e.Notes()[e.told:] {
		if e.note != nil {
			e.note(s)
		}
	}
	e.told = len(e.Notes())
}

func (e *noted) Run(ctx context.Context) error {
	defer e.tell()
	return e.Native.Run(ctx)
}
