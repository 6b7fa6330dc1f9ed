#!/usr/bin/env bash
# Runs go test with the given arguments, output as usual; when it fails,
# ends with the failed tests' own lines (each "--- FAIL" and what the test
# logged under it, and any panic or timeout), because a CI log is often
# read from its tail and the failures of a package that prints much
# scroll far above it.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"${GO:-go}" test "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  echo
  echo "== go test failed (exit $rc); the failures, again:"
  awk '
    /^[ \t]*--- FAIL/ { keep = 1; print; next }
    /^panic: / { keep = 0; left = 6; print; next }   # and which tests ran
    /^FAIL[ \t]/ { keep = 0; print; next }
    keep && /^[ \t]/ { print; next }
    left > 0 { left--; print; next }
    { keep = 0 }
  ' "$log" | head -n 120
fi
exit "$rc"
