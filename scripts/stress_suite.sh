#!/usr/bin/env bash
# The suite under CPU pressure: RUNS (default 3) consecutive `CI=true bash .ci/run` in fresh clones of
# HEAD while `stress-ng --cpu 1` keeps one core busy, so a test that passes only on an idle machine
# shows up (CONTRIBUTING.md, "No wall-clock luck"). Prints one line per run and writes
# stress-suite-<time>.json beside the logs; exits non-zero when any run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS="${RUNS:-3}"
OUT="${STRESS_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/stress-suite.XXXXXX")}"
command -v stress-ng >/dev/null 2>&1 || {
  echo "stress-suite: installing stress-ng with apt-get"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stress-ng >/dev/null
}
stress-ng --cpu 1 --timeout 0 --quiet &
STRESS=$!
trap 'kill "$STRESS" 2>/dev/null' EXIT
failed=0
results=()
for run in $(seq 1 "$RUNS"); do
  clone="$(mktemp -d "${TMPDIR:-/tmp}/stress-clone.XXXXXX")"
  git clone -q . "$clone"
  commit="$(git -C "$clone" rev-parse --short HEAD)"  # each run tests HEAD as it is when the run starts
  log="$OUT/run-$run.log"
  start=$(date +%s)
  (cd "$clone" && CI=true bash .ci/run) >"$log" 2>&1
  rc=$?
  seconds=$(( $(date +%s) - start ))
  summary="$(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed).* =+$|^[0-9]+ failed' "$log" | tail -1)"
  load="$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "stress-suite run $run of $RUNS ($commit): exit $rc in ${seconds} s, load $load: ${summary:-no pytest summary}"
  results+=("{\"run\": $run, \"commit\": \"$commit\", \"exit\": $rc, \"seconds\": $seconds, \"load\": \"$load\", \"summary\": \"${summary//\"/\'}\"}")
  [ "$rc" -eq 0 ] || failed=1
  rm -rf "$clone"
done
json="$OUT/stress-suite-$(date -u +%Y%m%dT%H%M%SZ).json"
(IFS=,; echo "{\"stress\": \"stress-ng --cpu 1\", \"runs\": [${results[*]}]}") >"$json"
echo "stress-suite: logs and $json in $OUT"
exit "$failed"
