# rig — build, test, demo. Targets that touch the network (test, demo, bench)
# need root: they build network namespaces. See README.md.

# sudo resets PATH (secure_path): find the Go toolchain where it usually is.
GO        ?= $(shell command -v go 2>/dev/null || { test -x /usr/local/go/bin/go && echo /usr/local/go/bin/go; } || echo go)
BIN       ?= bin/rig
BENCHBIN  ?= bin/rigbench
PKGS      ?= ./...
FUZZTIME  ?= 30s
STATICCHECK_VERSION ?= v0.8.2
DEADCODE_VERSION ?= v0.52.0
GOBIN     ?= $(shell $(GO) env GOPATH)/bin
# The scripts under .ci/ call go too: put the toolchain found above on PATH.
export PATH := $(if $(findstring /,$(GO)),$(dir $(GO)):)$(GOBIN):$(PATH)

# Debian packages the tests and the demo use; installed only when missing.
# qemu-user-static runs the arm64 unit tests on an amd64 machine; zsh and fish check
# the zsh and fish completion scripts; gcc builds the native engine, and the arm64
# cross compiler its arm64 program for make dist.
DEB_PKGS  ?= iproute2 stress-ng ethtool openssh-server openssh-client rt-tests sockperf linux-perf chromium qemu-user-static zsh fish \
	$(NATIVE_DEBS) $(NATIVE_CROSS_DEBS)

.PHONY: all build native native-test native-arm64 dist deps test test-arm64 unit unit-check chaos lint fmt-check vet staticcheck portable deadcode doors fuzz fuzz-smoke rigbench bench bench-smoke gobench gobench-smoke demo man clean

all: build

COMMIT    := $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo +dirty)
# VERSION, when set (make dist VERSION=0.2.0), replaces internal/version's.
VERSION   ?=
LDFLAGS   := -X github.com/rig-project/rig/internal/version.commit=$(COMMIT)$(if $(VERSION), -X github.com/rig-project/rig/internal/version.Version=$(VERSION))
DIST      ?= dist

build: native
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/rig

# The native engine (native/, docs/probes.md#the-native-engine): C11 and
# libc, built with the system C compiler (installed when missing), linked
# dynamically so that a kernel-bypass stack can be preloaded in front of
# libc. NATIVE_OUT is where it goes: beside bin/rig, where rig looks.
NATIVE_OUT    ?= $(patsubst %/,%,$(dir $(BIN)))
NATIVE_DEBS   := gcc libc6-dev
NATIVE_CROSS_DEBS := gcc-aarch64-linux-gnu libc6-dev-arm64-cross
NATIVE_CFLAGS ?= -std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -DRIG_COMMIT='"$(COMMIT)"'
NATIVE_SAN    := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
NATIVE_SRC    := native/respond.c native/sock.c native/pin.c native/wire.c native/handoff.c native/uring.c
SEND_SRC      := native/send.c native/sock.c native/pin.c native/wire.c native/handoff.c
NOISE_SRC     := native/noise.c native/pin.c native/handoff.c
# The compilers of make dist: the system's for its own architecture.
NATIVE_CC_amd64 ?= $(if $(filter x86_64,$(shell uname -m)),$(CC),x86_64-linux-gnu-gcc)
NATIVE_CC_arm64 ?= $(if $(filter aarch64,$(shell uname -m)),$(CC),aarch64-linux-gnu-gcc)

native:
	@command -v $(CC) >/dev/null 2>&1 || ./.ci/install-debs.sh $(NATIVE_DEBS)
	@mkdir -p $(NATIVE_OUT)
	$(CC) $(NATIVE_CFLAGS) -o $(NATIVE_OUT)/rig-respond-native $(NATIVE_SRC)
	$(CC) $(NATIVE_CFLAGS) -o $(NATIVE_OUT)/rig-send-native $(SEND_SRC)
	$(CC) $(NATIVE_CFLAGS) -o $(NATIVE_OUT)/rig-noise-native $(NOISE_SRC)

# native-test: what the Go tests run besides the programs (internal/testbin
# builds them into a temporary NATIVE_OUT): the programs under ASan and
# UBSan, the wire checker (under both too), the seccomp helper, the
# interposer and the interference the noise tests inject.
native-test: native
	@mkdir -p $(NATIVE_OUT)/san
	$(CC) $(NATIVE_CFLAGS) $(NATIVE_SAN) -o $(NATIVE_OUT)/san/rig-respond-native $(NATIVE_SRC)
	$(CC) $(NATIVE_CFLAGS) $(NATIVE_SAN) -o $(NATIVE_OUT)/san/rig-send-native $(SEND_SRC)
	$(CC) $(NATIVE_CFLAGS) $(NATIVE_SAN) -o $(NATIVE_OUT)/san/rig-noise-native $(NOISE_SRC)
	$(CC) $(NATIVE_CFLAGS) -o $(NATIVE_OUT)/rig-interfere native/test/interfere.c
	$(CC) $(NATIVE_CFLAGS) $(NATIVE_SAN) -o $(NATIVE_OUT)/rig-wire-check native/test/wirecheck.c native/wire.c
	$(CC) $(NATIVE_CFLAGS) -o $(NATIVE_OUT)/seccomp-exec native/test/seccomp-exec.c
	$(CC) $(NATIVE_CFLAGS) -shared -fPIC -o $(NATIVE_OUT)/librig-interpose.so native/test/interpose.c -ldl

# native-arm64: the arm64 programs and wire checker, cross-compiled, for
# test-arm64 to run under qemu-user.
native-arm64:
	@./.ci/install-debs.sh $(NATIVE_CROSS_DEBS)
	@mkdir -p $(NATIVE_OUT)
	$(NATIVE_CC_arm64) $(NATIVE_CFLAGS) -o $(NATIVE_OUT)/rig-respond-native $(NATIVE_SRC)
	$(NATIVE_CC_arm64) $(NATIVE_CFLAGS) -o $(NATIVE_OUT)/rig-send-native $(SEND_SRC)
	$(NATIVE_CC_arm64) $(NATIVE_CFLAGS) -o $(NATIVE_OUT)/rig-noise-native $(NOISE_SRC)
	$(NATIVE_CC_arm64) $(NATIVE_CFLAGS) -o $(NATIVE_OUT)/rig-wire-check native/test/wirecheck.c native/wire.c

# dist: static (CGO_ENABLED=0) rig for linux/amd64 and linux/arm64 with the
# version and commit stamped, the native programs for each beside it
# (dynamically linked), and their SHA256SUMS, in $(DIST)/.
dist:
	@./.ci/install-debs.sh $(NATIVE_DEBS) $(NATIVE_CROSS_DEBS)
	rm -rf $(DIST) && mkdir -p $(DIST)
	for a in amd64 arm64; do \
		GOOS=linux GOARCH=$$a CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(DIST)/rig-linux-$$a ./cmd/rig || exit 1; \
	done
	$(NATIVE_CC_amd64) $(NATIVE_CFLAGS) -o $(DIST)/rig-respond-native-linux-amd64 $(NATIVE_SRC)
	$(NATIVE_CC_arm64) $(NATIVE_CFLAGS) -o $(DIST)/rig-respond-native-linux-arm64 $(NATIVE_SRC)
	$(NATIVE_CC_amd64) $(NATIVE_CFLAGS) -o $(DIST)/rig-send-native-linux-amd64 $(SEND_SRC)
	$(NATIVE_CC_arm64) $(NATIVE_CFLAGS) -o $(DIST)/rig-send-native-linux-arm64 $(SEND_SRC)
	$(NATIVE_CC_amd64) $(NATIVE_CFLAGS) -o $(DIST)/rig-noise-native-linux-amd64 $(NOISE_SRC)
	$(NATIVE_CC_arm64) $(NATIVE_CFLAGS) -o $(DIST)/rig-noise-native-linux-arm64 $(NOISE_SRC)
	cd $(DIST) && sha256sum rig-linux-amd64 rig-linux-arm64 rig-respond-native-linux-* rig-send-native-linux-* rig-noise-native-linux-* > SHA256SUMS

# deploy/kubernetes is a module of its own (its manifest tests alone need
# the Kubernetes API types, kept out of rig's go.mod): test, unit and lint
# run it after PKGS.
K8S       := deploy/kubernetes

# deps: Go modules plus the Debian packages the integration tests need.
deps:
	$(GO) mod download
	cd $(K8S) && $(GO) mod download
	@./.ci/install-debs.sh $(DEB_PKGS)

# test: the whole suite as CI runs it: lint, unit + integration tests under
# the race detector (integration tests need root and skip without it), and a
# short run of every fuzz target. Packages run one at a time (-p 1): the
# integration tests share 2 CPUs and check host-wide state (no stress-ng
# left, no lab left), so they must not overlap. A failure ends with the
# failed tests' own lines (.ci/gotest.sh), where a CI log's tail shows them.
test: deps lint
	GO=$(GO) ./.ci/gotest.sh -race -p 1 -count=1 -timeout 40m $(PKGS)
	cd $(K8S) && GO=$(GO) ../../.ci/gotest.sh -race -count=1 ./...
	$(MAKE) fuzz-smoke
	$(MAKE) test-arm64

# Packages whose -short tests are pure logic (fake trees, no root, no
# namespaces): test-arm64 runs them for linux/arm64 under qemu-user.
# ARM64_SKIP names the tests among them that need the host's kernel
# (ethtool ioctls, which qemu-user does not translate, veth labs, a rig
# binary built for the host) or a thread's own CPU accounting (TestMeter:
# getrusage of a thread qemu-user emulates counts qemu's switches).
ARM64_PKGS ?= ./analysis/... ./internal/bench ./internal/check ./internal/cpulist ./internal/cpurank ./internal/cpusched ./internal/cstate \
	./internal/envsnap ./internal/facts ./internal/hostctl ./internal/hostfs ./internal/hostinfo ./internal/journal ./internal/power/... \
	./internal/rundir ./internal/samples ./internal/scenario ./internal/telemetry ./internal/wire ./nicctl
ARM64_SKIP ?= ^(TestReal.*|TestKill9ThenRestore|TestKill9DuringNAPISetThenRestore|TestSetHoldsThenUndoesOnSIGTERM|TestNICStatsVeth|TestNICStatsGuardVeth|TestReadFacts|TestMeter)$$

# test-arm64: go vet for linux/arm64, every package's tests compiled for
# it, ARM64_PKGS run under qemu-aarch64 (installed when missing; its
# absence fails), the arm64 native wire codec cross-checked under it, and
# the dist binaries checked (~3 min).
test-arm64:
	GO=$(GO) ARM64_PKGS="$(ARM64_PKGS)" ARM64_SKIP='$(ARM64_SKIP)' ./.ci/test-arm64.sh

# chaos: the fault matrix (root, ~4 min): SIGINT/SIGTERM/SIGHUP/SIGKILL of
# rig run in setup, in a round and in the last undo, killed agents and
# probes, a full disk, two runs at once, rig nicctl and rig restore during a
# run. Prints the table fault / expected / observed / held and fails if a
# row does not hold. `make test` skips it (RIG_CHAOS unset).
chaos:
	RIG_CHAOS=1 GO=$(GO) ./.ci/gotest.sh -race -count=1 -timeout 20m -run '^TestChaos$$' -v ./internal/chaos

# unit: fast tests only (no root needed), no race detector: -short skips
# every test gated by testbin.Integration (namespaces, stress-ng, root).
# unit-check runs them while watching the host, and fails if a network
# namespace appeared or stress-ng ran.
unit:
	$(GO) test -short -count=1 $(PKGS)
	cd $(K8S) && $(GO) test -short -count=1 ./...

unit-check:
	./.ci/unit-starts-nothing.sh $(PKGS)

lint: fmt-check vet staticcheck portable deadcode doors

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	cd $(K8S) && $(GO) vet ./...

staticcheck:
	@command -v staticcheck >/dev/null 2>&1 || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	staticcheck $(PKGS)
	cd $(K8S) && staticcheck ./...

# portable: the analysis and the formats it reads read no host, and the
# scenario format's validation only reads one on Linux, so they build for
# any OS (rig report, rig run --dry-run on a laptop).
PORTABLE  := ./analysis ./internal/samples ./internal/wire ./internal/rundir ./internal/scenario
portable:
	GOOS=windows $(GO) build $(PORTABLE)
	GOOS=darwin $(GO) build $(PORTABLE)

# deadcode: no production function is reachable only from tests (a seam a
# fake needs is reachable from the real constructor, or lives in _test.go).
deadcode:
	@command -v deadcode >/dev/null 2>&1 || $(GO) install golang.org/x/tools/cmd/deadcode@$(DEADCODE_VERSION)
	@out=$$(deadcode ./cmd/rig ./cmd/rigbench); \
	if [ -n "$$out" ]; then echo "reachable only from tests (delete, or move to a _test.go):"; echo "$$out"; exit 1; fi

# doors: only the packages that are a door to the kernel import x/sys/unix
# (as cilium/ebpf keeps one): the rest reach a syscall through them, so
# every ioctl, socket option and sysfs write has one owner and one fake.
DOORS := internal/tstamp internal/ethtoolnl internal/cpusched internal/hostinfo internal/journal \
	internal/netlab internal/facts internal/nicfake nicctl internal/hostctl
doors:
	@bad=$$($(GO) list -f '{{.ImportPath}} {{join .Imports " "}}' $(PKGS) | grep ' golang.org/x/sys/unix' | cut -d' ' -f1 | \
		grep -v -x -E '$(subst $(eval) ,|,$(addprefix github.com/rig-project/rig/,$(DOORS)))'); \
	if [ -n "$$bad" ]; then echo "x/sys/unix imported outside the kernel doors ($(DOORS)):"; echo "$$bad"; exit 1; fi

# fuzz runs every Fuzz target for FUZZTIME each.
fuzz:
	@./.ci/fuzz.sh $(FUZZTIME)

fuzz-smoke:
	@./.ci/fuzz.sh 3s

# rigbench: the bench tool, a developer tool beside rig (make dist does not
# ship it). bench: it measures $(BIN) against sockperf and cyclictest on an
# emulated lab, interleaved rounds (~15 min, root; docs/bench.md); the
# table goes to bench/RESULTS.md. BENCH_FLAGS adds flags, e.g.
# BENCH_FLAGS=--until-decided. bench-smoke: the same code path in a few
# minutes, as internal/bench's TestSmoke, which checks every part's figures
# (make test skips it). gobench: Go benchmarks.
BENCH_FLAGS ?=
rigbench:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BENCHBIN) ./cmd/rigbench

bench: build rigbench
	@./.ci/install-debs.sh iproute2 sockperf rt-tests linux-perf
	./$(BENCHBIN) --rig $(BIN) -v --rounds 8 --budget 15m --out bench/RESULTS.md $(BENCH_FLAGS)

bench-smoke: build rigbench
	@./.ci/install-debs.sh iproute2 sockperf rt-tests linux-perf
	RIG_BENCH_SMOKE=1 GO=$(GO) ./.ci/gotest.sh -count=1 -timeout 10m -run '^TestSmoke$$' -v ./internal/bench

gobench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=1 $(PKGS)

gobench-smoke:
	$(GO) test -run='^$$' -bench=. -benchtime=100x -count=1 $(PKGS)

# demo: build rig and run the demo scenario on the built-in emulated topology.
demo: build
	@./.ci/install-debs.sh iproute2 stress-ng
	./$(BIN) run scenarios/demo.yaml

# man: the man pages rig.1 and rig-COMMAND.1, generated by rig man from
# the flags this rig defines, in $(MANDIR) (read one with man -l
# build/man/rig-run.1; install: cp build/man/*.1 /usr/local/share/man/man1).
MANDIR    ?= build/man
man: build
	rm -rf $(MANDIR) && $(BIN) man $(MANDIR)

clean:
	rm -rf bin build $(DIST)
