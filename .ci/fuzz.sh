#!/usr/bin/env bash
# Runs every Go fuzz target in the module for the given time each.
# A failure that left a new crasher in testdata/fuzz fails at once; one
# that did not (the fuzzing engine on a loaded 2-vCPU machine sometimes
# reports a hung worker) is retried once.
set -euo pipefail
t=${1:-30s}
fail=0
log=$(mktemp)
count() { if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi; }
trap 'rm -f "$log"' EXIT
while IFS= read -r line; do
  file=${line%%:*}; name=${line##*func }; name=${name%%(*}
  pkg=./$(dirname "$file")
  corpus="$(dirname "$file")/testdata/fuzz/$name"
  for attempt in 1 2; do
    before=$(count "$corpus")
    echo "fuzz $pkg $name ($t)"
    if go test -run='^$' -fuzz="^${name}\$" -fuzztime="$t" "$pkg" >"$log" 2>&1; then
      break
    fi
    after=$(count "$corpus")
    if [ "$after" -gt "$before" ] || [ "$attempt" -eq 2 ]; then
      cat "$log"; fail=1; break
    fi
    echo "  (no crasher written; retrying once)"; tail -3 "$log"
  done
done < <(grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . | sed 's#^\./##')
exit $fail
