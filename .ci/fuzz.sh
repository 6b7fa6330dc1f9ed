#!/usr/bin/env bash
# Runs every Go fuzz target in the module for the given time each.
set -euo pipefail
t=${1:-30s}
fail=0
while IFS= read -r line; do
  file=${line%%:*}; name=${line##*func }; name=${name%%(*}
  pkg=./$(dirname "$file")
  echo "fuzz $pkg $name ($t)"
  if ! go test -run='^$' -fuzz="^${name}\$" -fuzztime="$t" "$pkg" >/tmp/fuzz.$$.log 2>&1; then
    cat /tmp/fuzz.$$.log; fail=1
  fi
done < <(grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . | sed 's#^\./##')
rm -f /tmp/fuzz.$$.log
exit $fail
