# Shared by scripts/bench-*: the binary to measure, a stand-in on a free loopback port, cleanup.
# Sourced, not run. Stand-in figures are stand-in figures, never MongoDB figures.
#
# MICROSHARD_BIN      use this microshard binary instead of building `cargo build --release`.
# MICROSHARD_BENCH_SMOKE=1   tiny sizes: checks the script works, measures nothing worth keeping.

bench_smoke() { [ -n "${MICROSHARD_BENCH_SMOKE:-}" ]; }

# Appended to each script's header line, so a smoke run's numbers are never mistaken for figures.
bench_mode_note() {
    if bench_smoke; then echo " -- SMOKE MODE: tiny sizes, usually a debug build; not a measurement"; fi
}

# Sets BIN to the microshard binary to measure.
bench_binary() {
    if [ -n "${MICROSHARD_BIN:-}" ]; then
        BIN=$MICROSHARD_BIN
    elif bench_smoke; then
        # Smoke mode must stay cheap: the debug build is good enough to prove the script works.
        cargo build --quiet --bin microshard
        BIN=${CARGO_TARGET_DIR:-target}/debug/microshard
    else
        cargo build --release --quiet --bin microshard
        BIN=${CARGO_TARGET_DIR:-target}/release/microshard
    fi
    [ -x "$BIN" ] || { echo "bench: no executable at $BIN" >&2; exit 1; }
}

BENCH_PIDS=()
BENCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/microshard-bench.XXXXXX")
bench_cleanup() {
    local pid
    for pid in "${BENCH_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    [ -n "${BENCH_KEEP:-}" ] || rm -rf "$BENCH_TMP"
}
trap bench_cleanup EXIT INT TERM

# Starts a stand-in mongod (capacity model off) on a free loopback port; sets STANDIN_URI and STANDIN_PID.
bench_standin() {
    local name=${1:-standin} log port i
    log=$BENCH_TMP/$name.log
    mkdir -p "$BENCH_TMP/$name"
    "$BIN" standin mongod --port 0 --bind_ip 127.0.0.1 --dbpath "$BENCH_TMP/$name" --logpath "$log" --quiet \
        2>>"$log.stderr" &
    STANDIN_PID=$!
    BENCH_PIDS+=("$STANDIN_PID")
    port=
    for i in $(seq 1 200); do
        port=$(grep -o '"Waiting for connections".*' "$log" 2>/dev/null | grep -o '"port":[0-9]*' | head -1 | cut -d: -f2 || true)
        [ -n "$port" ] && break
        kill -0 "$STANDIN_PID" 2>/dev/null || { echo "bench: stand-in exited; log:" >&2; cat "$log" "$log.stderr" >&2 2>/dev/null; exit 1; }
        sleep 0.05
    done
    [ -n "$port" ] || { echo "bench: stand-in did not report its port; log: $log" >&2; exit 1; }
    STANDIN_URI="mongodb://127.0.0.1:$port/ycsb?w=1"
}

# `bench_time_v NAME cmd...`: prints "peak_kib wall_seconds" of the command run under /usr/bin/time -v;
# its stdout is kept in $BENCH_TMP/NAME.stdout (YCSB's report).
bench_time_v() {
    local out=$BENCH_TMP/$1
    shift
    /usr/bin/time -v -o "$out.time" "$@" >"$out.stdout" 2>"$out.stderr" || {
        echo "bench: command failed: $*" >&2
        tail -20 "$out.stderr" >&2
        exit 1
    }
    local kib wall
    kib=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$out.time")
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$out.time" |
        awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
    echo "$kib $wall"
}

# `bench_overall NAME`: YCSB's "[OVERALL], Throughput(ops/sec)" from $BENCH_TMP/NAME.stdout.
bench_overall() {
    awk -F', ' '/^\[OVERALL\], Throughput/ {print $3}' "$BENCH_TMP/$1.stdout"
}
