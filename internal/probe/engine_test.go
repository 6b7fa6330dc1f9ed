package probe

import (
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/cpusched"
)

// TestEnginePoll: the native engine's backends parse only with --engine
// native, the Go engine saying why it refuses them; each prints back to
// the text it came from; ParsePoll's modes parse for both engines.
func TestEnginePoll(t *testing.T) {
	for in, want := range map[string]Poll{
		"prefer-busy-poll:50":    {Mode: PreferBusyPoll, BusyPollUS: 50, Budget: DefaultBudget},
		"prefer-busy-poll:50:16": {Mode: PreferBusyPoll, BusyPollUS: 50, Budget: 16},
		"epoll":                  {Mode: Epoll},
		"io-uring":               {Mode: IOUring},
		"io-uring-sqpoll":        {Mode: IOUringSQPoll},
		"busy-poll:20":           {Mode: Block, BusyPollUS: 20},
		"busy":                   {Mode: Busy},
	} {
		p, err := ParseEnginePoll(in, EngineNative)
		if err != nil || p != want || p.String() != in {
			t.Errorf("native %q = %+v (%q), %v; want %+v", in, p, p.String(), err, want)
		}
		_, err = ParseEnginePoll(in, EngineGo)
		if native := p.Mode > Busy; native != (err != nil) || native && !strings.Contains(err.Error(), "needs --engine native") {
			t.Errorf("go %q: %v", in, err)
		}
	}
	for _, bad := range []string{"prefer-busy-poll", "prefer-busy-poll:0", "prefer-busy-poll:50:0", "prefer-busy-poll:50:x", "prefer-busy-poll:50:16:1"} {
		if _, err := ParseEnginePoll(bad, EngineNative); err == nil || !strings.Contains(err.Error(), "prefer-busy-poll") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := ParseEnginePoll("spin", EngineNative); err == nil || err.Error() != `poll mode "spin": want block, busy or busy-poll:µs` {
		t.Errorf("spin: %v", err)
	}
	if _, err := ParseEngine("c"); err == nil || !strings.Contains(err.Error(), "go, native, xdp, xdp-generic or tc") {
		t.Errorf("engine c: %v", err)
	}
}

// FuzzParseEnginePoll: whatever the native engine accepts prints back to
// a text it reads as the same mode; the Go engine accepts only ParsePoll's.
func FuzzParseEnginePoll(f *testing.F) {
	for _, s := range []string{"epoll", "io-uring", "prefer-busy-poll:50", "prefer-busy-poll:50:64", "prefer-busy-poll:1:1", "busy"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseEnginePoll(s, EngineNative)
		if err != nil {
			return
		}
		q, err := ParseEnginePoll(p.String(), EngineNative)
		if err != nil || q != p {
			t.Fatalf("%q = %+v; its String %q reads as %+v, %v", s, p, p.String(), q, err)
		}
		if _, err := ParseEnginePoll(s, EngineGo); (err == nil) != (p.Mode <= Busy) {
			t.Fatalf("%q: the Go engine says %v", s, err)
		}
	})
}

// TestStack: every stack but kernel needs the native engine (rig respond's
// and rig send's), the Go
// engine saying why; custom needs its library; the custom flags belong to
// custom alone; an unknown stack lists the known ones.
func TestStack(t *testing.T) {
	base := DefaultRespond()
	base.Iface, base.RunID, base.Engine = "veth-r", 1, EngineNative
	for name, c := range map[string]struct {
		change func(*Respond)
		want   string // "" ok
	}{
		"kernel on go":    {func(r *Respond) { r.Engine = EngineGo }, ""},
		"onload":          {func(r *Respond) { r.Stack.Name = "onload" }, ""},
		"onload on go":    {func(r *Respond) { r.Engine, r.Stack.Name = EngineGo, "onload" }, "--stack onload needs --engine native: the Go engine makes its socket calls as raw system calls"},
		"xlio on go":      {func(r *Respond) { r.Engine, r.Stack.Name = EngineGo, "xlio" }, "no preloaded stack sees"},
		"custom":          {func(r *Respond) { r.Stack = Stack{Name: StackCustom, Preload: "/x/libi.so"} }, ""},
		"custom no lib":   {func(r *Respond) { r.Stack = Stack{Name: StackCustom, Launcher: "/x/l"} }, "--stack custom needs --stack-preload"},
		"launcher onload": {func(r *Respond) { r.Stack = Stack{Name: "onload", Launcher: "/x/l"} }, "are for --stack custom"},
		"env on kernel":   {func(r *Respond) { r.Stack.Env = "A=1" }, "need --stack"},
		"fd-stat kernel":  {func(r *Respond) { r.Stack.FdStat = "x_fd_stat" }, "--stack-fd-stat and --stack-env need --stack"},
		"fd-stat onload":  {func(r *Respond) { r.Stack = Stack{Name: "onload", FdStat: "x_fd_stat"} }, "--stack-fd-stat are for --stack custom"},
		"bad env":         {func(r *Respond) { r.Stack = Stack{Name: "vma", Env: "VMA_SPEC"} }, `--stack-env "VMA_SPEC": want NAME=VALUE`},
	} {
		r := base
		c.change(&r)
		err := r.Check()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	// rig send checks its stack as rig respond does.
	snd := DefaultSend()
	snd.Iface, snd.Stack = "veth-s", Stack{Name: StackCustom, Preload: "/x/libi.so"}
	if err := snd.Check(); err == nil || !strings.Contains(err.Error(), "--stack custom needs --engine native") {
		t.Errorf("send, custom on go: %v", err)
	}
	if snd.Engine = EngineNative; snd.Check() != nil {
		t.Errorf("send, custom on native: %v", snd.Check())
	}
	if _, err := ParseStack("dpdk"); err == nil || err.Error() != `stack "dpdk": want kernel, exasock, onload, vma, xlio or custom` {
		t.Errorf("dpdk: %v", err)
	}
	if info := (Stack{Name: StackCustom, Preload: "/opt/i/libi.so", FdStat: "i_fd_stat"}).Info(); info.Library != "libi.so" || info.FdStat != "i_fd_stat" {
		t.Errorf("custom info %+v", info)
	}
}

// TestReflectorRefusals: the XDP reflector has no loop: --cpu, --poll and
// --sched are refused with the reason; its engine names read back.
func TestReflectorRefusals(t *testing.T) {
	for _, e := range []Engine{EngineXDP, EngineXDPGeneric, EngineTC} {
		if got, err := ParseEngine(e.String()); err != nil || got != e || !e.Reflector() {
			t.Errorf("%v: read back as %v, %v", e, got, err)
		}
		for _, c := range []struct {
			change func(*Respond)
			want   string
		}{
			{func(r *Respond) { r.CPU = 1 }, "--cpu 1 with --engine " + e.String() + ": the program has no thread to pin"},
			{func(r *Respond) { r.Poll = Poll{Mode: Busy} }, "--poll busy with --engine " + e.String() + ": the program does not wait"},
			{func(r *Respond) { r.Sched = cpusched.Sched{Policy: cpusched.FIFO, Priority: 1} }, "--sched fifo:1 with --engine " + e.String()},
			{func(*Respond) {}, ""},
		} {
			r := DefaultRespond()
			r.Iface, r.RunID, r.Engine = "lo", 1, e
			c.change(&r)
			err := r.Check()
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("%v: %v, want %q", e, err, c.want)
			}
		}
	}
	if EngineGo.Reflector() || EngineNative.Reflector() {
		t.Error("a loop engine called a reflector")
	}
}
