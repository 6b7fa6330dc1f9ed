package probe

import (
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// StackName names the socket stack the native engine's program runs on:
// the kernel's, a kernel-bypass stack of StackTable, or a custom one.
type StackName string

// StackKernel is the kernel's own stack: nothing preloaded.
const StackKernel StackName = "kernel"

// StackCustom is a stack given by --stack-preload (and --stack-launcher).
const StackCustom StackName = "custom"

// StackInfo is how a stack is launched and proven.
type StackInfo struct {
	// Launcher is the stack's own launcher, on PATH, which execs the
	// program with its library preloaded ("": Library goes in LD_PRELOAD).
	Launcher string
	// Library is the stack's library as the dynamic loader names it: it
	// must be mapped in the running program (/proc/PID/maps).
	Library string
	// Presence is the stack's own "am I loaded" function, int f(void),
	// which the program looks up (dlsym) and calls ("": it offers none).
	Presence string
	// FdStat is the stack's per-socket check, with onload_fd_stat's
	// signature, which the program calls on its socket: the library can be
	// loaded yet leave the socket to the kernel ("": it offers none rig
	// uses — exasock, VMA and XLIO have no such per-fd call).
	FdStat string
	// Install says how to get the stack when it is missing.
	Install string
}

// StackTable are the kernel-bypass stacks rig knows by name.
var StackTable = map[StackName]StackInfo{
	"onload": {Launcher: "onload", Library: "libonload.so", Presence: "onload_is_present", FdStat: "onload_fd_stat",
		Install: "install OpenOnload (AMD Solarflare: its onload launcher goes on PATH, libonload.so in the loader's path) and load its driver (onload_tool reload)"},
	"exasock": {Launcher: "exasock", Library: "libexasock.so", Presence: "exasock_loaded",
		Install: "install the ExaNIC software (exanic-software: make install, or the exanic-utils package: it puts exasock on PATH and libexasock.so in the loader's path)"},
	"vma": {Library: "libvma.so",
		Install: "install NVIDIA VMA (the libvma package of MLNX_OFED or DOCA-Host: libvma.so in the loader's path, ldconfig -p | grep libvma)"},
	"xlio": {Library: "libxlio.so",
		Install: "install NVIDIA XLIO (the libxlio package of DOCA-Host: libxlio.so in the loader's path, ldconfig -p | grep libxlio)"},
}

// ParseStack parses kernel, custom or a name of StackTable; "" is kernel.
func ParseStack(s string) (StackName, error) {
	n := StackName(s)
	if _, ok := StackTable[n]; ok || n == StackKernel || n == StackCustom {
		return n, nil
	}
	if s == "" {
		return StackKernel, nil
	}
	names := []string{string(StackKernel)}
	for k := range StackTable {
		names = append(names, string(k))
	}
	slices.Sort(names[1:])
	return "", fmt.Errorf("stack %q: want %s or custom", s, strings.Join(names, ", "))
}

// MarshalText writes the name: rig respond --stack.
func (n StackName) MarshalText() ([]byte, error) { return []byte(n), nil }

// UnmarshalText reads a name with ParseStack.
func (n *StackName) UnmarshalText(b []byte) error {
	v, err := ParseStack(string(b))
	*n = v
	return err
}

// Stack is the socket stack of rig respond and rig send --engine native: --stack and,
// for custom, --stack-launcher and --stack-preload; --stack-env for any
// but kernel.
type Stack struct {
	Name     StackName `json:"name"`
	Launcher string    `json:"launcher,omitempty"` // custom: a launcher that execs the program ("": none)
	Preload  string    `json:"preload,omitempty"`  // custom: the library preloaded, and proven mapped
	Presence string    `json:"presence,omitempty"` // custom: its presence check, as StackInfo's ("": none)
	FdStat   string    `json:"fd_stat,omitempty"`  // custom: its per-socket check, as StackInfo's ("": none)
	// Env are NAME=VALUE pairs, comma-separated, added to the program's
	// environment (EF_*, VMA_*, XLIO_*); a string keeps Respond comparable.
	Env string `json:"env,omitempty"`
}

// Vars are Env's pairs.
func (s Stack) Vars() []string {
	if s.Env == "" {
		return nil
	}
	return strings.Split(s.Env, ",")
}

// Info is how s is launched and proven: StackTable's entry, or custom's
// from its flags (zero for kernel).
func (s Stack) Info() StackInfo {
	if s.Name != StackCustom {
		return StackTable[s.Name]
	}
	return StackInfo{Launcher: s.Launcher, Library: filepath.Base(s.Preload), Presence: s.Presence, FdStat: s.FdStat, Install: "check --stack-launcher and --stack-preload"}
}

// String is the stack's name, as sample headers and captions give it.
func (s Stack) String() string {
	if s.Kernel() {
		return string(StackKernel)
	}
	return string(s.Name)
}

// Kernel reports whether s is the kernel's own stack.
func (s Stack) Kernel() bool { return s.Name == "" || s.Name == StackKernel }

// check refuses a stack the engine cannot run or flags that do not fit it.
func (s Stack) check(e Engine) error {
	switch {
	case s.Kernel() && (s.Launcher != "" || s.Preload != "" || s.Presence != "" || s.FdStat != "" || s.Env != ""):
		return fmt.Errorf("--stack-launcher, --stack-preload, --stack-presence, --stack-fd-stat and --stack-env need --stack: the kernel's stack preloads nothing")
	case s.Kernel():
		return nil
	case e != EngineNative:
		return fmt.Errorf("--stack %s needs --engine native: the Go engine makes its socket calls as raw system calls, which no preloaded stack sees (the kernel would answer, not %s)", s.Name, s.Name)
	case s.Name == StackCustom && s.Preload == "":
		return fmt.Errorf("--stack custom needs --stack-preload LIB: the library preloaded and proven mapped in the program (and --stack-launcher PATH if the stack has a launcher)")
	case s.Name != StackCustom && (s.Launcher != "" || s.Preload != "" || s.Presence != "" || s.FdStat != ""):
		return fmt.Errorf("--stack-launcher, --stack-preload, --stack-presence and --stack-fd-stat are for --stack custom: --stack %s is launched and checked as rig knows it", s.Name)
	}
	for _, kv := range s.Vars() {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.ContainsAny(k, " \t") {
			return fmt.Errorf("--stack-env %q: want NAME=VALUE (e.g. EF_POLL_USEC=100000)", kv)
		}
	}
	return nil
}

// register defines the stack's flags on fs (rig respond's and rig send's),
// bound to s and set to d.
func (s *Stack) register(fs *flag.FlagSet, d Stack) {
	fs.TextVar(&s.Name, "stack", d.Name, "socket stack of --engine native: kernel | onload | exasock | vma | xlio (launched by its launcher or preloaded, and proven mapped in the program) | custom (--stack-preload)")
	fs.StringVar(&s.Launcher, "stack-launcher", d.Launcher, "--stack custom: a launcher that execs the program (as onload does)")
	fs.StringVar(&s.Preload, "stack-preload", d.Preload, "--stack custom: the library to preload (LD_PRELOAD), a path or a name the dynamic loader finds")
	fs.StringVar(&s.Presence, "stack-presence", d.Presence, "--stack custom: the library's int f(void) that says it is loaded (as onload_is_present): the program calls it and must hear non-zero")
	fs.StringVar(&s.FdStat, "stack-fd-stat", d.FdStat, "--stack custom: the library's per-socket check, int f(int fd, struct onload_stat *) as onload_fd_stat: the program calls it on its socket and must hear 1 (accelerated)")
	fs.Var((*envList)(&s.Env), "stack-env", "NAME=VALUE for the program's environment under a stack, comma-separated or repeated (e.g. EF_RX_TIMESTAMPING=3)")
}

// envList is --stack-env: NAME=VALUE pairs, comma-separated or repeated.
type envList string

func (l *envList) String() string {
	if l == nil {
		return ""
	}
	return string(*l)
}

func (l *envList) Set(s string) error {
	if *l != "" {
		s = string(*l) + "," + s
	}
	*l = envList(s)
	return nil
}
