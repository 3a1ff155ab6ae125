#!/usr/bin/env bash
# A three-node MariaDB Galera cluster on loopback or in network namespaces, for tests and CI.
#
#   scripts/galera-cluster.sh up     [DIR]   start (no-op when already up and healthy)
#   scripts/galera-cluster.sh down   [DIR]   stop every node, remove DIR, leave nothing running
#   scripts/galera-cluster.sh status [DIR]   print each node's state; exit 0 only when all 3 Synced, size 3
#   scripts/galera-cluster.sh kill N [DIR]   SIGKILL node N (failure tests)
#   scripts/galera-cluster.sh start N [DIR]  restart node N so it rejoins (IST/SST), wait until Synced
#   scripts/galera-cluster.sh env    [DIR]   print mode=… and nI=HOST:PORT lines (the SQL addresses)
#   netns mode only (partition tests):
#   scripts/galera-cluster.sh cut A B [DIR]  drop every packet between nodes A and B (both ways)
#   scripts/galera-cluster.sh isolate N [DIR] cut node N from both others
#   scripts/galera-cluster.sh lossy N PCT [DIR]  drop PCT% of the packets between N and the others
#   scripts/galera-cluster.sh slow N MS [DIR]    delay every byte between N and the others MS ms each way
#   scripts/galera-cluster.sh heal   [DIR]   remove every cut, every loss and every delay
#
# DIR defaults to $AUTONUMBER_GALERA_DIR or /tmp/autonumber-galera (it must be reachable by the
# `mysql` user, so not under /root). The wait timeout is $GALERA_TIMEOUT seconds (default 120).
# User 'app' (password 'app', ALL privileges, from the clients' address) and database
# `autonumber_test` exist on every node once `up` returns.
#
# Two network modes, chosen at `up` by $AUTONUMBER_GALERA_NET (remembered in DIR/mode):
# - loopback (default): node i listens on 127.0.0.1:331i (SQL), 456i (group communication), 457i
#   (IST) and 458i (rsync SST); $AUTONUMBER_GALERA_PORT_OFFSET (default 0) is added to every port
#   so two clusters can run side by side.
# - netns: node i runs in its own network namespace ang<T>n<i>, joined by veth pairs to a bridge
#   ang<T>br that holds 10.213.<T>.254/24 for the clients; node i is 10.213.<T>.i (SQL 3306, group
#   communication 4567, IST 4568, SST 4444). <T> (20..219) is derived from DIR, so clusters in other
#   directories get other names and subnets. Links between nodes can be cut (blackhole routes inside
#   the nodes' namespaces), made lossy (an iptables `statistic` match in the nodes' namespaces, on
#   what they send each other: netem is missing from some kernels), slowed (the nodes' group
#   communication connections REDIRECTed through scripts/delay_proxy.py, a user-space TCP proxy in
#   each namespace that releases every byte MS ms after it arrived) and healed; the clients' link to
#   every node stays up. Nothing outside
#   the namespaces and the bridge is touched; `down` deletes them.
#
# The machine's own MariaDB (port 3306, /var/lib/mysql) is never touched: every node runs with
# --defaults-file pointing at its own my.cnf under DIR.
set -euo pipefail

NODES=(1 2 3)
TIMEOUT="${GALERA_TIMEOUT:-120}"
STOP_TIMEOUT="${GALERA_STOP_TIMEOUT:-30}"
GALERA_LIB=/usr/lib/galera/libgalera_smm.so

log() { printf '[galera] %s\n' "$*" >&2; }
die() { printf '[galera] ERROR: %s\n' "$*" >&2; exit 1; }

usage() {
    sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# ---------------------------------------------------------------- arguments
CMD="${1:-}"
[[ -n "$CMD" ]] || usage
shift
NODE=""
NODE2=""
LOSS=""
DELAY=""
case "$CMD" in
    kill|start|isolate)
        NODE="${1:-}"
        [[ "$NODE" =~ ^[123]$ ]] || die "$CMD needs a node number 1, 2 or 3"
        shift
        ;;
    cut)
        NODE="${1:-}"
        NODE2="${2:-}"
        [[ "$NODE" =~ ^[123]$ && "$NODE2" =~ ^[123]$ && "$NODE" != "$NODE2" ]] ||
            die "cut needs two different node numbers 1, 2 or 3"
        shift 2
        ;;
    lossy)
        NODE="${1:-}"
        LOSS="${2:-}"
        [[ "$NODE" =~ ^[123]$ ]] || die "lossy needs a node number 1, 2 or 3"
        [[ "$LOSS" =~ ^[0-9]{1,2}$ ]] || die "lossy needs a loss in percent, 1-99, got '$LOSS'"
        shift 2
        ;;
    slow)
        NODE="${1:-}"
        DELAY="${2:-}"
        [[ "$NODE" =~ ^[123]$ ]] || die "slow needs a node number 1, 2 or 3"
        [[ "$DELAY" =~ ^[0-9]{1,4}$ && "$DELAY" -gt 0 ]] || die "slow needs a delay in ms, 1-9999, got '$DELAY'"
        shift 2
        ;;
    up|down|status|env|heal) ;;
    -h|--help|help) usage ;;
    *) die "unknown command '$CMD' (up|down|status|env|kill N|start N|cut A B|isolate N|lossy N PCT|slow N MS|heal)" ;;
esac
DIR="${1:-${AUTONUMBER_GALERA_DIR:-/tmp/autonumber-galera}}"
DIR="$(realpath -m -- "$DIR")"
[[ "$DIR" != "/" && "$DIR" != "/tmp" && "$DIR" != "/var/lib/mysql" ]] || die "refusing DIR=$DIR"

# ---------------------------------------------------------------- network mode
OFFSET="${AUTONUMBER_GALERA_PORT_OFFSET:-0}"
[[ "$OFFSET" =~ ^[0-9]{1,4}$ ]] || die "AUTONUMBER_GALERA_PORT_OFFSET must be a number, got '$OFFSET'"
TAG=$(($(printf '%s' "$DIR" | cksum | awk '{print $1}') % 200 + 20))
NET="10.213.$TAG"
BRIDGE="ang${TAG}br"
CLIENT_IP="$NET.254"
if [[ -r "$DIR/mode" ]]; then
    MODE="$(cat "$DIR/mode")"
else
    MODE="${AUTONUMBER_GALERA_NET:-loopback}"
fi
[[ "$MODE" == loopback || "$MODE" == netns ]] || die "network mode must be loopback or netns, got '$MODE'"

ns() { echo "ang${TAG}n$1"; }
veth() { echo "ang${TAG}v$1"; }
node_ip() { if [[ "$MODE" == netns ]]; then echo "$NET.$1"; else echo 127.0.0.1; fi; }
client_ip() { if [[ "$MODE" == netns ]]; then echo "$CLIENT_IP"; else echo 127.0.0.1; fi; }
sql_port() { if [[ "$MODE" == netns ]]; then echo 3306; else echo $((3310 + $1 + OFFSET)); fi; }
gcomm_port() { if [[ "$MODE" == netns ]]; then echo 4567; else echo $((4560 + $1 + OFFSET)); fi; }
ist_port() { if [[ "$MODE" == netns ]]; then echo 4568; else echo $((4570 + $1 + OFFSET)); fi; }
sst_port() { if [[ "$MODE" == netns ]]; then echo 4444; else echo $((4580 + $1 + OFFSET)); fi; }
in_ns() { # node command... (inside the node's namespace in netns mode)
    local n=$1
    shift
    if [[ "$MODE" == netns ]]; then ip netns exec "$(ns "$n")" "$@"; else "$@"; fi
}

ndir() { echo "$DIR/n$1"; }
sock() { echo "$DIR/n$1/run/mysqld.sock"; }
pidfile() { echo "$DIR/n$1/run/node.pid"; }
errlog() { echo "$DIR/n$1/error.log"; }

# ---------------------------------------------------------------- packages
ensure_packages() {
    local missing=()
    command -v mariadbd >/dev/null 2>&1 || missing+=(mariadb-server)
    command -v mariadb >/dev/null 2>&1 || missing+=(mariadb-client)
    [[ -e "$GALERA_LIB" ]] || missing+=(galera-4)
    command -v rsync >/dev/null 2>&1 || missing+=(rsync)
    # wsrep_sst_rsync needs one of ss/lsof/sockstat to see its rsync daemon listening.
    command -v ss >/dev/null 2>&1 || command -v lsof >/dev/null 2>&1 || missing+=(iproute2)
    if ((${#missing[@]})); then
        [[ $EUID -eq 0 ]] || die "missing packages (${missing[*]}) and not root to install them"
        log "installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    fi
    id mysql >/dev/null 2>&1 || die "no 'mysql' system user (is mariadb-server installed?)"
}

# ---------------------------------------------------------------- processes
# PID of node N if it is alive and really is our mariadbd (guards against stale/reused pids).
node_pid() {
    local f pid
    f="$(pidfile "$1")"
    [[ -r "$f" ]] || return 1
    pid="$(cat "$f" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [[ -r "/proc/$pid/cmdline" ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "--defaults-file=$(ndir "$1")/my.cnf" || return 1
    echo "$pid"
}

# Every process whose command line names a node directory of this DIR (mariadbd, the SST script,
# its rsync daemon), except this script and its ancestors.
dir_pids() {
    local pid cmd self_chain=" $$ " p=$$
    while [[ "$p" -gt 1 ]]; do
        p="$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null || echo 1)"
        self_chain+="$p "
    done
    for pid in $(pgrep -f -- "$DIR/n[123]/" 2>/dev/null || true); do
        [[ "$self_chain" == *" $pid "* ]] && continue
        cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)"
        [[ -n "$cmd" ]] && echo "$pid"
    done
}

wait_gone() { # pid timeout -> 0 if gone
    local pid=$1 t=$2 i
    for ((i = 0; i < t * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        # a zombie of ours counts as gone
        [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" == Z ]] && return 0
        sleep 0.1
    done
    return 1
}

stop_pid() { # pid label
    local pid=$1 label=$2
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    if ! wait_gone "$pid" "$STOP_TIMEOUT"; then
        log "$label (pid $pid) did not exit within ${STOP_TIMEOUT}s; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
        wait_gone "$pid" 10 || die "$label (pid $pid) survived SIGKILL"
    fi
}

# ---------------------------------------------------------------- SQL helpers
q() { # node sql... (as root over the node's socket)
    local n=$1
    shift
    mariadb --no-defaults --protocol=socket --socket="$(sock "$n")" -uroot -N -B \
        --connect-timeout=2 -e "$*" 2>/dev/null
}

node_status() { # node -> "state size" or "down -"
    local out state size
    if ! node_pid "$1" >/dev/null; then
        echo "down -"
        return
    fi
    out="$(q "$1" "SHOW GLOBAL STATUS WHERE Variable_name IN
        ('wsrep_local_state_comment','wsrep_cluster_size')" || true)"
    state="$(awk '$1=="wsrep_local_state_comment"{print $2}' <<<"$out")"
    size="$(awk '$1=="wsrep_cluster_size"{print $2}' <<<"$out")"
    echo "${state:-starting} ${size:--}"
}

fail_node() { # node message
    local n=$1
    shift
    {
        printf '[galera] ERROR: node n%s (%s:%s): %s\n' "$n" "$(node_ip "$n")" "$(sql_port "$n")" "$*"
        printf '[galera] --- tail of %s ---\n' "$(errlog "$n")"
        tail -n 40 "$(errlog "$n")" 2>/dev/null || echo "(no error.log)"
        printf '[galera] --- end ---\n'
    } >&2
    exit 1
}

# Wait until node N is Synced and reports cluster size >= want. With a third argument "heal",
# re-bootstrap the primary component if no running node has had one for 6 s (see restore_quorum).
wait_synced() {
    local n=$1 want=$2 heal=${3:-} deadline st state size no_prim_since=""
    deadline=$((SECONDS + TIMEOUT))
    while :; do
        if [[ "$heal" == heal ]]; then
            if any_primary; then
                no_prim_since=""
            elif [[ -z "$no_prim_since" ]]; then
                no_prim_since=$SECONDS
            elif ((SECONDS - no_prim_since >= 6)); then
                restore_quorum "$n"
                no_prim_since=""
            fi
        fi
        node_pid "$n" >/dev/null || fail_node "$n" "process exited while starting"
        st="$(node_status "$n")"
        state="${st% *}"
        size="${st#* }"
        if [[ "$state" == Synced && "$size" =~ ^[0-9]+$ && "$size" -ge "$want" ]]; then
            return 0
        fi
        ((SECONDS < deadline)) || fail_node "$n" \
            "not Synced with cluster size $want after ${TIMEOUT}s (state=$state size=$size)"
        sleep 0.5
    done
}

# ---------------------------------------------------------------- node setup
write_cnf() {
    local n=$1 d
    d="$(ndir "$n")"
    cat >"$d/my.cnf" <<EOF
# Generated by scripts/galera-cluster.sh -- node n$n of a throwaway test cluster.
[mysqld]
user=mysql
datadir=$d/data
tmpdir=$d/tmp
socket=$d/run/mysqld.sock
pid-file=$d/run/mysqld.pid
port=$(sql_port "$n")
bind-address=$(node_ip "$n")
skip-name-resolve
log-error=$d/error.log
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
innodb_buffer_pool_size=128M
innodb_log_file_size=48M
max_connections=300
wsrep_on=ON
wsrep_provider=$GALERA_LIB
wsrep_cluster_name=autonumber_test
wsrep_cluster_address=gcomm://$(node_ip 1):$(gcomm_port 1),$(node_ip 2):$(gcomm_port 2),$(node_ip 3):$(gcomm_port 3)
wsrep_node_address=$(node_ip "$n")
wsrep_node_name=n$n
# Loopback only (gmcast listens on 0.0.0.0 by default); a small gcache; failure detection in
# ~3 s instead of the WAN-friendly defaults (5 s suspect / 15 s inactive), so that a killed node
# stops stalling the survivors' commits quickly and a restarted one is admitted without waiting
# for its old incarnation to be evicted.
wsrep_provider_options="base_port=$(gcomm_port "$n");gmcast.listen_addr=tcp://$(node_ip "$n"):$(gcomm_port "$n");ist.recv_addr=$(node_ip "$n"):$(ist_port "$n");gcache.size=64M;evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;evs.install_timeout=PT6S"
wsrep_sst_receive_address=$(node_ip "$n"):$(sst_port "$n")
wsrep_sst_method=rsync
EOF
}

check_ports_free() {
    local p holders n
    [[ "$MODE" == loopback ]] || return 0
    for p in $(for n in "${NODES[@]}"; do sql_port "$n"; gcomm_port "$n"; ist_port "$n"; sst_port "$n"; done); do
        holders="$(ss -Htlnp "sport = :$p" 2>/dev/null || true)"
        [[ -z "$holders" ]] || die "port $p is already in use: $holders"
    done
}

launch() { # node [extra mariadbd args...]
    local n=$1 d pid
    shift
    d="$(ndir "$n")"
    # setsid: the node must not die with the caller's process group (a test runner's Ctrl-C).
    in_ns "$n" setsid /usr/sbin/mariadbd --defaults-file="$d/my.cnf" "$@" \
        </dev/null >>"$d/stdout.log" 2>&1 &
    pid=$!
    # $! is the background subshell (in_ns, `ip netns exec`), not necessarily mariadbd: find the server
    local i found=""
    for ((i = 0; i < 50; i++)); do
        found="$(pgrep -f -- "^/usr/sbin/mariadbd --defaults-file=$d/my.cnf" | head -n1 || true)"
        [[ -n "$found" ]] && break
        sleep 0.1
    done
    pid="${found:-$pid}"
    echo "$pid" >"$(pidfile "$n")"
    sleep 0.2
    kill -0 "$pid" 2>/dev/null || fail_node "$n" "mariadbd exited at once"
    log "node n$n started (pid $pid)"
}

# Position recovery (what mysqld_safe does): lets a restarted node ask for IST instead of SST.
recover_position() {
    local n=$1 d rlog pos
    d="$(ndir "$n")"
    rlog="$d/wsrep_recovery.log"
    : >"$rlog"
    chown mysql:mysql "$rlog"
    /usr/sbin/mariadbd --defaults-file="$d/my.cnf" --wsrep-recover --log-error="$rlog" \
        </dev/null >/dev/null 2>&1 || true
    pos="$(grep -o 'WSREP: Recovered position: .*' "$rlog" | tail -n1 | awk '{print $4}')"
    echo "${pos:-}"
}

any_primary() {
    local n
    for n in "${NODES[@]}"; do
        node_pid "$n" >/dev/null || continue
        [[ "$( (q "$n" "SHOW GLOBAL STATUS LIKE 'wsrep_cluster_status'" || true) |
            awk '{print $2}')" == Primary ]] && return 0
    done
    return 1
}

# After two of the three nodes died, the survivor is non-Primary (no quorum) and refuses both
# queries and joiners. This is a throwaway test cluster: re-bootstrap the primary component from
# the running node that has seen the most (pc.bootstrap=YES), as an operator would.
restore_quorum() { # node being started (not a candidate)
    local n best="" best_seq=-2 seq status
    for n in "${NODES[@]}"; do
        node_pid "$n" >/dev/null || continue
        status="$( (q "$n" "SHOW GLOBAL STATUS LIKE 'wsrep_cluster_status'" || true) | awk '{print $2}')"
        [[ "$status" == Primary ]] && return 0
        [[ "$n" == "$1" ]] && continue
        seq="$( (q "$n" "SHOW GLOBAL STATUS LIKE 'wsrep_last_committed'" || true) | awk '{print $2}')"
        if [[ "$seq" =~ ^[0-9]+$ ]] && ((seq > best_seq)); then
            best=$n
            best_seq=$seq
        fi
    done
    [[ -n "$best" ]] || return 0
    log "no Primary component left; re-bootstrapping it from node n$best (seqno $best_seq)"
    q "$best" "SET GLOBAL wsrep_provider_options='pc.bootstrap=YES'" ||
        fail_node "$best" "could not re-bootstrap the primary component"
    wait_synced "$best" 1
}

cluster_healthy() {
    local n st
    for n in "${NODES[@]}"; do
        st="$(node_status "$n")"
        [[ "$st" == "Synced 3" ]] || return 1
    done
}

# ---------------------------------------------------------------- namespaces (netns mode)
netns_down() {
    local n
    for n in "${NODES[@]}"; do
        ip netns del "$(ns "$n")" 2>/dev/null || true
        ip link del "$(veth "$n")" 2>/dev/null || true
    done
    ip link del "$BRIDGE" 2>/dev/null || true
}

netns_up() {
    local n
    command -v ip >/dev/null 2>&1 || die "netns mode needs iproute2 (ip)"
    [[ $EUID -eq 0 ]] || die "netns mode needs root (ip netns, veth, bridge)"
    if ip -4 route show | grep -q "^$NET\.0/24" && ! ip link show "$BRIDGE" >/dev/null 2>&1; then
        die "subnet $NET.0/24 is already routed on this host; use another DIR"
    fi
    netns_down
    ip link add "$BRIDGE" type bridge
    ip addr add "$CLIENT_IP/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
    for n in "${NODES[@]}"; do
        ip netns add "$(ns "$n")"
        ip -n "$(ns "$n")" link set lo up
        ip link add "$(veth "$n")" type veth peer name eth0 netns "$(ns "$n")"
        ip link set "$(veth "$n")" master "$BRIDGE" up
        ip -n "$(ns "$n")" addr add "$NET.$n/24" dev eth0
        ip -n "$(ns "$n")" link set eth0 up
    done
    log "namespaces $(ns 1) $(ns 2) $(ns 3) on bridge $BRIDGE ($NET.0/24, clients at $CLIENT_IP)"
}

need_netns() {
    [[ "$MODE" == netns ]] || die "$CMD needs a cluster started in netns mode (AUTONUMBER_GALERA_NET=netns up)"
    [[ -d "$DIR" ]] || die "no cluster at $DIR (run up first)"
}

cut_one_way() { # from to: node `from` drops everything it sends to `to`
    ip -n "$(ns "$1")" route replace blackhole "$NET.$2/32"
}

# ---------------------------------------------------------------- commands
cmd_env() {
    local n
    echo "mode=$MODE"
    echo "client=$(client_ip)"
    for n in "${NODES[@]}"; do echo "n$n=$(node_ip "$n"):$(sql_port "$n")"; done
}

cmd_cut() {
    need_netns
    cut_one_way "$NODE" "$NODE2"
    cut_one_way "$NODE2" "$NODE"
    log "cut n$NODE <-> n$NODE2"
}

cmd_isolate() {
    local other
    need_netns
    for other in "${NODES[@]}"; do
        [[ "$other" == "$NODE" ]] && continue
        cut_one_way "$NODE" "$other"
        cut_one_way "$other" "$NODE"
    done
    log "isolated n$NODE"
}

drop_share() { # from to percent: node `from` drops that share of what it sends to `to`
    local p
    p="$(printf '0.%02d' "$3")"
    ip netns exec "$(ns "$1")" iptables -A OUTPUT -d "$NET.$2/32" -m statistic --mode random --probability "$p" -j DROP
}

cmd_lossy() {
    local other
    need_netns
    command -v iptables >/dev/null || die "lossy needs iptables (apt-get install iptables)"
    for other in "${NODES[@]}"; do
        [[ "$other" == "$NODE" ]] && continue
        drop_share "$NODE" "$other" "$LOSS"
        drop_share "$other" "$NODE" "$LOSS"
    done
    log "n$NODE's links to the other nodes: $LOSS% of the packets dropped each way"
}

PROXY_PORT=14567
proxy_pidfile() { echo "$DIR/n$1/run/delay-proxy.pid"; }

# Node `from`'s new group-communication connections to `to` go through its namespace's proxy.
# Only mariadbd's (user mysql): the proxy, as root, connects to the real address.
redirect_to_proxy() { # from to
    ip netns exec "$(ns "$1")" iptables -t nat -A OUTPUT -p tcp -d "$NET.$2/32" --dport "$(gcomm_port "$2")" \
        -m owner --uid-owner mysql -j REDIRECT --to-ports "$PROXY_PORT"
}

start_proxy() { # node: a delay proxy in its namespace (its command line names the node's directory,
    # so `down` reaps it with the rest)
    local n=$1 f i
    f="$(proxy_pidfile "$n")"
    [[ -r "$f" ]] && kill -0 "$(cat "$f")" 2>/dev/null && return 0
    rm -f "$f"
    ip netns exec "$(ns "$n")" setsid "${PYTHON:-python3}" "$(dirname "$(realpath "$0")")/delay_proxy.py" \
        --port "$PROXY_PORT" --delay-ms "$DELAY" --pidfile "$f" </dev/null >>"$(ndir "$n")/delay-proxy.log" 2>&1 &
    for ((i = 0; i < 50; i++)); do
        [[ -s "$f" ]] && return 0
        sleep 0.1
    done
    die "the delay proxy of n$n did not start: $(tail -n3 "$(ndir "$n")/delay-proxy.log")"
}

stop_proxies() {
    local n f
    for n in "${NODES[@]}"; do
        f="$(proxy_pidfile "$n")"
        [[ -r "$f" ]] && stop_pid "$(cat "$f")" "delay proxy of n$n"
        rm -f "$f"
    done
}

cmd_slow() {
    local other n
    need_netns
    command -v iptables >/dev/null || die "slow needs iptables (apt-get install iptables)"
    for n in "${NODES[@]}"; do start_proxy "$n"; done
    for other in "${NODES[@]}"; do
        [[ "$other" == "$NODE" ]] && continue
        redirect_to_proxy "$NODE" "$other"
        redirect_to_proxy "$other" "$NODE"
    done
    # NAT applies to new connections only: end node N's established ones so that they reconnect
    # through the proxies.
    ip netns exec "$(ns "$NODE")" ss -K "( sport = :$(gcomm_port "$NODE") or dport = :$(gcomm_port "$NODE") )" >/dev/null
    log "n$NODE's links to the other nodes: every byte delayed ${DELAY} ms each way"
}

cmd_heal() {
    local n route
    need_netns
    for n in "${NODES[@]}"; do
        if command -v iptables >/dev/null; then
            ip netns exec "$(ns "$n")" iptables -F OUTPUT
            ip netns exec "$(ns "$n")" iptables -t nat -F OUTPUT
        fi
        while read -r route; do
            # shellcheck disable=SC2086 # "blackhole ADDR": two words on purpose
            [[ -n "$route" ]] && ip -n "$(ns "$n")" route del $route
        done < <(ip -n "$(ns "$n")" route show type blackhole | awk '{print $1, $2}')
    done
    stop_proxies # their connections end; the nodes reconnect directly
    log "healed: no cut, no loss, no delay"
}

cmd_status() {
    local n st ok=0
    if [[ ! -d "$DIR" ]]; then
        echo "no cluster at $DIR"
        return 1
    fi
    for n in "${NODES[@]}"; do
        st="$(node_status "$n")"
        printf 'n%s %s:%s state=%s cluster_size=%s\n' "$n" "$(node_ip "$n")" "$(sql_port "$n")" "${st% *}" "${st#* }"
        [[ "$st" == "Synced 3" ]] || ok=1
    done
    return $ok
}

cmd_down() {
    local n pid left
    if [[ -d "$DIR" ]]; then
        # one at a time; node 1 (the one that bootstrapped) last
        for n in 3 2 1; do
            if pid="$(node_pid "$n")"; then
                log "stopping node n$n (pid $pid)"
                stop_pid "$pid" "node n$n"
            fi
        done
    fi
    # leftovers: a node whose pid file was lost, an SST script or its rsync daemon
    for pid in $(dir_pids); do
        log "stopping leftover process $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-120)"
        stop_pid "$pid" "process $pid"
    done
    left="$(dir_pids)"
    [[ -z "$left" ]] || die "processes still running under $DIR: $left"
    [[ "$MODE" == netns ]] && netns_down
    rm -rf -- "$DIR"
    log "down: nothing left under $DIR"
}

cmd_up() {
    local n t0=$SECONDS
    if [[ -d "$DIR" ]] && cluster_healthy; then
        log "already up at $DIR"
        cmd_status
        return 0
    fi
    ensure_packages
    if [[ -e "$DIR" ]]; then
        log "found a stale or broken cluster at $DIR; removing it"
        cmd_down
        MODE="${AUTONUMBER_GALERA_NET:-loopback}"
    fi
    # A stale dir under another name could still hold the ports.
    check_ports_free

    mkdir -p "$DIR"
    echo "$MODE" >"$DIR/mode"
    [[ "$MODE" == netns ]] && netns_up
    for n in "${NODES[@]}"; do
        mkdir -p "$(ndir "$n")"/{data,run,tmp}
        write_cnf "$n"
    done
    chown -R mysql:mysql "$DIR"
    chmod 750 "$DIR"

    # Only node 1 needs a system database: nodes 2 and 3 receive node 1's datadir by rsync SST.
    log "initialising node n1"
    mariadb-install-db --defaults-file="$(ndir 1)/my.cnf" --user=mysql --skip-test-db \
        >"$(ndir 1)/install.log" 2>&1 || {
        cat "$(ndir 1)/install.log" >&2
        die "mariadb-install-db failed for n1"
    }

    launch 1 --wsrep-new-cluster
    wait_synced 1 1
    log "node n1 Synced after $((SECONDS - t0))s"
    launch 2
    wait_synced 2 2
    log "node n2 Synced after $((SECONDS - t0))s"
    launch 3
    for n in "${NODES[@]}"; do wait_synced "$n" 3; done
    log "all nodes Synced, cluster size 3, after $((SECONDS - t0))s"

    q 1 "CREATE USER IF NOT EXISTS 'app'@'$(client_ip)' IDENTIFIED BY 'app';
         GRANT ALL PRIVILEGES ON *.* TO 'app'@'$(client_ip)';
         CREATE DATABASE IF NOT EXISTS autonumber_test;" || fail_node 1 "could not create user/database"
    # Every node must accept the app user over TCP (the DDL replicates through the cluster).
    for n in "${NODES[@]}"; do
        local deadline=$((SECONDS + 30))
        until mariadb --no-defaults -h"$(node_ip "$n")" -P"$(sql_port "$n")" -uapp -papp --connect-timeout=2 \
            -N -B -e "SELECT 1" autonumber_test >/dev/null 2>&1; do
            ((SECONDS < deadline)) || fail_node "$n" "user app cannot connect to autonumber_test"
            sleep 0.3
        done
    done
    log "up in $((SECONDS - t0))s at $DIR"
    cmd_status
}

cmd_kill() {
    local pid
    pid="$(node_pid "$NODE")" || die "node n$NODE is not running"
    kill -KILL "$pid"
    wait_gone "$pid" 10 || die "node n$NODE (pid $pid) survived SIGKILL"
    log "node n$NODE (pid $pid) killed"
}

cmd_start() {
    local n=$NODE other live=0 pos args=()
    [[ -d "$(ndir "$n")" ]] || die "no cluster at $DIR (run up first)"
    if node_pid "$n" >/dev/null; then
        log "node n$n already running"
    else
        for other in "${NODES[@]}"; do
            [[ "$other" == "$n" ]] && continue
            node_pid "$other" >/dev/null && live=$((live + 1))
        done
        ((live > 0)) || die "no other node is running; the cluster is gone (run down, then up)"
        # leftovers of the killed node (its SST rsync daemon) would hold its ports
        for pid in $(pgrep -f -- "$(ndir "$n")/" 2>/dev/null || true); do
            [[ "$pid" == "$$" ]] || stop_pid "$pid" "leftover process $pid"
        done
        pos="$(recover_position "$n")"
        if [[ -n "$pos" ]]; then
            log "node n$n recovered position $pos"
            args+=("--wsrep-start-position=$pos")
        fi
        launch "$n" "${args[@]}"
    fi
    # Wait for the nodes that are running (3 normally; fewer while a test keeps another one down).
    local running=0
    for other in "${NODES[@]}"; do node_pid "$other" >/dev/null && running=$((running + 1)); done
    wait_synced "$n" "$running" heal
    for other in "${NODES[@]}"; do
        node_pid "$other" >/dev/null && wait_synced "$other" "$running"
    done
    log "node n$n rejoined (cluster size $running)"
    cmd_status || true
}

case "$CMD" in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    kill) cmd_kill ;;
    start) cmd_start ;;
    env) cmd_env ;;
    cut) cmd_cut ;;
    isolate) cmd_isolate ;;
    lossy) cmd_lossy ;;
    slow) cmd_slow ;;
    heal) cmd_heal ;;
esac
