#!/usr/bin/env bash
# The real PostgreSQL and Redis servers the scale-out and audit tests use,
# from Debian's packages (installed here when missing), on loopback ports
# in a private directory. Nothing is skipped: when a server cannot be
# installed or started, this fails with what went wrong.
#
#   eval "$(scripts/services.sh start)"   # exports SLUICE_TEST_POSTGRES_URL, SLUICE_TEST_REDIS_URL
#   scripts/services.sh env               # the same exports, for servers already started
#   scripts/services.sh stop              # stops both and removes their data
#
# SLUICE_SERVICES_DIR (default /tmp/sluice-services) holds their data,
# sockets and logs; SLUICE_PG_PORT / SLUICE_REDIS_PORT choose the ports
# (default 55432 / 56379).
set -euo pipefail

DIR="${SLUICE_SERVICES_DIR:-/tmp/sluice-services}"
PG_PORT="${SLUICE_PG_PORT:-55432}"
REDIS_PORT="${SLUICE_REDIS_PORT:-56379}"
PG_DB=sluice_test

say() { printf 'services: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

pg_bin() {
    local initdb
    initdb=$(ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -1 || true)
    [[ -n "$initdb" ]] && dirname "$initdb"
}

install_missing() {
    local want=()
    [[ -n "$(pg_bin)" ]] || want+=(postgresql)
    command -v redis-server >/dev/null || want+=(redis-server)
    ((${#want[@]} == 0)) && return
    say "installing ${want[*]} (Debian packages)"
    command -v apt-get >/dev/null || die "apt-get not found: install ${want[*]} by hand"
    if ! apt-get install -y --no-install-recommends "${want[@]}" >"$DIR/apt.log" 2>&1; then
        apt-get update >>"$DIR/apt.log" 2>&1 || true
        apt-get install -y --no-install-recommends "${want[@]}" >>"$DIR/apt.log" 2>&1 ||
            die "could not install ${want[*]}; see $DIR/apt.log"
    fi
}

# PostgreSQL refuses to run as root: run its tools as the postgres user.
as_pg() {
    if [[ $(id -u) == 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

exports() {
    printf 'export SLUICE_TEST_POSTGRES_URL=%q\n' "postgres://postgres@127.0.0.1:$PG_PORT/$PG_DB"
    printf 'export SLUICE_TEST_REDIS_URL=%q\n' "redis://127.0.0.1:$REDIS_PORT/"
}

start_pg() {
    local bin data="$DIR/pg"
    bin=$(pg_bin)
    [[ -n "$bin" ]] || die "PostgreSQL's initdb not found after install"
    if [[ ! -f "$data/PG_VERSION" ]]; then
        mkdir -p "$data"
        [[ $(id -u) == 0 ]] && chown postgres: "$data" "$DIR"
        as_pg "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 >"$DIR/initdb.log" 2>&1 ||
            die "initdb failed; see $DIR/initdb.log"
    fi
    if ! as_pg "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        as_pg "$bin/pg_ctl" -D "$data" -l "$DIR/pg.log" -w -t 60 \
            -o "-p $PG_PORT -k $DIR -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null ||
            die "PostgreSQL did not start on port $PG_PORT; see $DIR/pg.log"
    fi
    for _ in $(seq 1 60); do
        "$bin/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && break
        sleep 0.5
    done
    "$bin/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" || die "PostgreSQL is not accepting connections on $PG_PORT"
    if ! "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -Atc "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'" | grep -q 1; then
        "$bin/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres "$PG_DB" || die "could not create database $PG_DB"
    fi
    say "PostgreSQL ready on 127.0.0.1:$PG_PORT"
}

start_redis() {
    if ! redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1; then
        redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --daemonize yes \
            --dir "$DIR" --pidfile "$DIR/redis.pid" --logfile "$DIR/redis.log" \
            --save '' --appendonly no >/dev/null ||
            die "Redis did not start on port $REDIS_PORT; see $DIR/redis.log"
    fi
    for _ in $(seq 1 60); do
        redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG && break
        sleep 0.25
    done
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG ||
        die "Redis is not answering on $REDIS_PORT; see $DIR/redis.log"
    say "Redis ready on 127.0.0.1:$REDIS_PORT"
}

stop_all() {
    local bin
    bin=$(pg_bin)
    if [[ -n "$bin" && -f "$DIR/pg/PG_VERSION" ]]; then
        as_pg "$bin/pg_ctl" -D "$DIR/pg" -m fast -w stop >/dev/null 2>&1 || true
    fi
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
    rm -rf "$DIR"
    say "stopped"
}

case "${1:-}" in
start)
    mkdir -p "$DIR"
    install_missing
    start_pg
    start_redis
    exports
    ;;
env) exports ;;
stop) stop_all ;;
*)
    echo "usage: $0 start|env|stop" >&2
    exit 64
    ;;
esac
