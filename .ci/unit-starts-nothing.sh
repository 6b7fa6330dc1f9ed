#!/usr/bin/env bash
# Runs the short suite (go test -short ./..., as make unit does) and watches
# it: it fails if a network namespace appeared or a stress-ng process ran.
# As root it runs in its own mount and PID namespaces, with a private
# /run/netns, so it sees only what its own tests start, even while other
# test runs use the host; as another user the integration tests skip anyway
# and it watches the host.
set -euo pipefail
if [ "$(id -u)" = 0 ] && [ -z "${RIG_UNIT_PRIVATE:-}" ]; then
  mkdir -p /run/netns
  exec env RIG_UNIT_PRIVATE=1 unshare --mount --propagation private --pid --fork --mount-proc \
    sh -c 'mount -t tmpfs rig-unit /run/netns && exec "$0" "$@"' "$0" "$@"
fi
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
