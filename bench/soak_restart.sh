#!/usr/bin/env bash
# Soak under server restarts — NOT for CI: it restarts the local PostgreSQL and MariaDB servers.
#
# One Python process inserts into both backends for SOAK_SECONDS with SOAK_CALLERS callers each;
# meanwhile this script restarts PostgreSQL, waits, then restarts MariaDB. The driver then checks
# that no number was handed out or stored twice and that the SAME process inserts again (the pools
# recovered; nothing on the client side was restarted). Exit 0 when both backends pass.
#
#   bash bench/soak_restart.sh                 # defaults below
#   SOAK_SECONDS=90 bash bench/soak_restart.sh
#
# It writes bench/results/soak-<timestamp>.json and the soak section of docs/performance.md.
set -euo pipefail

cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
SOAK_SECONDS=${SOAK_SECONDS:-60}
SOAK_CALLERS=${SOAK_CALLERS:-8}
PG_URL=${AUTONUMBER_BENCH_PG_URL:-postgresql+psycopg://postgres@127.0.0.1:5432/autonumber_bench}
MYSQL_URL=${AUTONUMBER_BENCH_MYSQL_URL:-mysql+pymysql://root@127.0.0.1:3306/autonumber_bench}
PG_RESTART=${PG_RESTART:-restart_postgresql}
MARIADB_RESTART=${MARIADB_RESTART:-restart_mariadb}

# The machine starts its servers without systemd (start-stop-daemon, pg_ctlcluster): restart them
# the same way, and wait until they answer.
restart_postgresql() {
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main restart
}
restart_mariadb() {
  mariadb-admin -uroot shutdown
  while pgrep -x mariadbd >/dev/null; do sleep 0.2; done
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
  for _ in $(seq 1 60); do mariadb -h127.0.0.1 -uroot -e 'SELECT 1' >/dev/null 2>&1 && return 0; sleep 0.5; done
  echo "soak: MariaDB did not come back" >&2; return 1
}
FIRST_RESTART_AFTER=${FIRST_RESTART_AFTER:-$((SOAK_SECONDS / 4))}
BETWEEN_RESTARTS=${BETWEEN_RESTARTS:-$((SOAK_SECONDS / 3))}

if (( FIRST_RESTART_AFTER + BETWEEN_RESTARTS + 10 > SOAK_SECONDS )); then
  echo "soak: SOAK_SECONDS=$SOAK_SECONDS is too short for the restart schedule" >&2
  exit 2
fi

echo "soak: ${SOAK_SECONDS}s, ${SOAK_CALLERS} callers per backend; PostgreSQL restarts at +${FIRST_RESTART_AFTER}s," \
     "MariaDB at +$((FIRST_RESTART_AFTER + BETWEEN_RESTARTS))s"
"$PY" -m bench.soak --seconds "$SOAK_SECONDS" --callers "$SOAK_CALLERS" \
  --url "$PG_URL" --url "$MYSQL_URL" --docs docs/performance.md &
driver=$!
trap 'kill "$driver" 2>/dev/null || true' INT TERM

sleep 5  # the driver recreates and bootstraps both databases first
sleep "$FIRST_RESTART_AFTER"
echo "soak: restarting PostgreSQL ($PG_RESTART) at $(date -u +%T)"
$PG_RESTART
sleep "$BETWEEN_RESTARTS"
echo "soak: restarting MariaDB ($MARIADB_RESTART) at $(date -u +%T)"
$MARIADB_RESTART

status=0
wait "$driver" || status=$?
if (( status == 0 )); then
  echo "soak: PASS — numbers unique, both engines recovered without a process restart"
else
  echo "soak: FAIL (driver exit $status) — see the JSON above" >&2
fi
exit "$status"
