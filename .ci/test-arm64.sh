#!/usr/bin/env bash
# The arm64 half of `make test`, run on an amd64 machine: go vet for
# linux/arm64, compile every package's tests for it, run the pure-logic
# unit tests (ARM64_PKGS, -short: no root, no namespaces) under qemu-user,
# cross-check the arm64 native wire codec against Go's under it, run the
# arm64 noise probe's loop under it (CNTVCT_EL0 against CNTFRQ_EL0) and
# read its handoff, and build `make dist` and check both rig binaries are
# static and stamped and the native programs dynamic, of their
# architecture, and stamped.
# A missing qemu is an error, never a skip.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${GO:=go}" "${ARM64_PKGS:?}" "${ARM64_SKIP:?}"
./.ci/install-debs.sh qemu-user-static
qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)
if [ -z "$qemu" ]; then
  echo "test-arm64: no qemu-aarch64-static or qemu-aarch64 on PATH (Debian: apt-get install qemu-user-static)" >&2
  exit 1
fi
export GOOS=linux GOARCH=arm64 CGO_ENABLED=0
echo "arm64: go vet ./..."
"$GO" vet ./...
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "arm64: compiling every package's tests"
"$GO" test -c -o "$tmp/tests/" ./... >/dev/null
n=$(find "$tmp/tests" -name '*.test' | wc -l)
[ "$n" -gt 0 ] || { echo "test-arm64: no test binary built" >&2; exit 1; }
file_arch=$(od -An -tx1 -j18 -N2 "$(find "$tmp/tests" -name '*.test' | head -1)" | tr -d ' ')
[ "$file_arch" = b700 ] || { echo "test-arm64: test binaries are not aarch64 (e_machine $file_arch)" >&2; exit 1; }
echo "arm64: $n test binaries compiled"
echo "arm64: unit tests under $qemu"
# shellcheck disable=SC2086
"$GO" test -short -count=1 -exec "$qemu" -skip "$ARM64_SKIP" $ARM64_PKGS
unset GOOS GOARCH CGO_ENABLED
echo "arm64: the native wire codec against Go's, under $qemu"
make --no-print-directory -s native-arm64 NATIVE_OUT="$tmp/arm64" >/dev/null
sysroot=/usr/aarch64-linux-gnu
RIG_WIRE_CHECK="$qemu -L $sysroot $tmp/arm64/rig-wire-check" "$GO" test -count=1 -run '^TestWireCrossCheck$' ./responder
echo "arm64: the noise probe's loop and its handoff, under $qemu"
RIG_NOISE_PROG="$qemu -L $sysroot $tmp/arm64/rig-noise-native" "$GO" test -count=1 -run '^TestNoiseProgram$' ./internal/native
echo "dist: both rig binaries and the native programs"
make --no-print-directory dist DIST="$tmp/dist" >/dev/null
( cd "$tmp/dist" && sha256sum -c SHA256SUMS >/dev/null )
commit=$(git rev-parse --short=12 HEAD)
for a in amd64 arm64; do
  b="$tmp/dist/rig-linux-$a"
  info=$("$GO" version -m "$b")
  for want in "GOARCH=$a" "CGO_ENABLED=0"; do
    grep -q -- "$want" <<<"$info" || { echo "dist: $b lacks $want:" >&2; echo "$info" >&2; exit 1; }
  done
  run=(); [ "$a" = arm64 ] && run=("$qemu")
  v=$("${run[@]}" "$b" version); v=${v%%$'\n'*}
  grep -q "commit $commit" <<<"$v" || { echo "dist: $b reports \"$v\", want commit $commit" >&2; exit 1; }
  echo "dist: rig-linux-$a: $v"
  for p in rig-respond-native rig-send-native rig-noise-native; do
    n="$tmp/dist/$p-linux-$a"
    want=3e00; [ "$a" = arm64 ] && want=b700
    machine=$(od -An -tx1 -j18 -N2 "$n" | tr -d ' ')
    [ "$machine" = "$want" ] || { echo "dist: $n is not $a (e_machine $machine)" >&2; exit 1; }
    readelf -l "$n" | grep -q 'program interpreter' || { echo "dist: $n is not dynamically linked (a bypass stack could not interpose libc)" >&2; exit 1; }
    run=(); [ "$a" = arm64 ] && run=("$qemu" -L "$sysroot")
    v=$("${run[@]}" "$n" --version)
    grep -q "commit $commit" <<<"$v" || { echo "dist: $n reports \"$v\", want commit $commit" >&2; exit 1; }
    echo "dist: $p-linux-$a: $v"
  done
done
