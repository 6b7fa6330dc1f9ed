#!/usr/bin/env bash
# Runs the short suite (go test -short ./..., as make unit does) and watches
# the host while it runs: it fails if a network namespace appeared or a
# stress-ng process ran. Run it alone on the host (other test runs building
# namespaces would count). Needs root to see every namespace; as another
# user the integration tests skip anyway.
set -euo pipefail
seen=$(mktemp)
trap 'rm -f "$seen"; kill "$watch" 2>/dev/null || true' EXIT
before=$(ip netns list 2>/dev/null | awk '{print $1}' | sort)
(
  while :; do
    now=$(ip netns list 2>/dev/null | awk '{print $1}' | sort)
    new=$(comm -13 <(echo "$before") <(echo "$now") | tr '\n' ' ')
    [ -n "${new// /}" ] && echo "netns: $new" >>"$seen"
    if p=$(pgrep -x -l stress-ng); then echo "stress-ng: $p" | tr '\n' ' ' >>"$seen"; echo >>"$seen"; fi
    sleep 0.05
  done
) &
watch=$!
go test -short -count=1 "${@:-./...}"
kill "$watch"; wait "$watch" 2>/dev/null || true
if [ -s "$seen" ]; then
  echo "go test -short started what only integration tests may (gate them with testbin.Integration):"
  sort -u "$seen"
  exit 1
fi
echo "go test -short: no network namespace created, no stress-ng run"
