#!/usr/bin/env bash
# Build the wheel and sdist, install the wheel into a clean venv OUTSIDE the checkout, and use it:
# `setup apply`, one insert, `serve` answering /healthz. Proves the package works without the
# source tree (templates, static files, seeds and data-spec shipped). Run by .ci/run.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/autonumber-wheel.XXXXXX")"
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

"$PY" -m build --outdir "$WORK/dist" "$ROOT" >/dev/null
ls "$WORK"/dist/autonumber-*.tar.gz >/dev/null  # the sdist was built too
python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q "$WORK"/dist/autonumber-*.whl 2>&1 | grep -v '^WARNING' || true
cd "$WORK"  # nothing of the checkout on the path
AN="$WORK/venv/bin/autonumber"
DB="sqlite:///$WORK/smoke.db"
"$AN" --version
"$WORK/venv/bin/python" -c "import autonumber, sys; sys.exit(0 if autonumber.__file__.startswith('$WORK/venv') else 1)"
"$AN" setup apply --db "$DB" --quiet
"$AN" records insert Case --db "$DB" --data '{"Subject": "wheel smoke"}'
PORT="$("$WORK/venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$AN" serve --db "$DB" --port "$PORT" >"$WORK/serve.log" 2>&1 &
SERVER=$!
for _ in $(seq 1 100); do
  if "$WORK/venv/bin/python" - "$PORT" <<'PY'
import sys, urllib.request
try:
    with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/healthz", timeout=2) as r:
        sys.exit(0 if r.status == 200 else 1)
except OSError:
    sys.exit(1)
PY
  then echo "wheel smoke: setup apply, insert and serve /healthz OK"; exit 0; fi
  kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/serve.log"; exit 1; }
  sleep 0.2
done
cat "$WORK/serve.log"; echo "wheel smoke: /healthz never answered" >&2; exit 1
