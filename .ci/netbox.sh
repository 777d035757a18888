#!/usr/bin/env bash
# A real NetBox (the `netbox` wheel from PyPI) on loopback, for nodenet's
# integration tests: PostgreSQL (the machine's cluster), Redis and gunicorn.
#
#   .ci/netbox.sh install   venv + pinned wheel, PostgreSQL role/database, redis-server
#   .ci/netbox.sh start     all of the above, a ready schema, gunicorn; writes $CACHE/env
#   .ci/netbox.sh reset     a clean database again (from the cached dump), server restarted
#   .ci/netbox.sh stop      gunicorn and the Redis this script started (PostgreSQL stays)
#   .ci/netbox.sh status    what runs; exit 0 when NetBox answers
#   .ci/netbox.sh manage …  a NetBox management command (e.g. `manage nbshell`)
#
# After `start`, `. "$CACHE/env"` gives NETBOX_URL and NETBOX_TOKEN (a v1
# token: `Authorization: Token $NETBOX_TOKEN`; admin/admin for the web UI).
# Every step is idempotent: what exists is kept. Settings (environment):
# NODENET_NETBOX_CACHE (default ~/.cache/nodenet-netbox: venv, schema dump,
# env, logs), NODENET_NETBOX_PORT (8765), NODENET_NETBOX_REDIS_PORT (6380),
# NODENET_NETBOX_DB (netbox), NODENET_NETBOX_WORKERS (3),
# NODENET_NETBOX_SCHEMA (fast|migrate), NODENET_NETBOX_PYTHON,
# NODENET_NETBOX_NICE (unset: the servers keep the priority they get;
# 19 beside the lab, see servers_nice).
#
# Measured on this 2-core machine: cold (no venv, no cache) 1-1.5 minutes,
# nearly all of it pip; with the venv, a dropped database is ready and served
# again in 10-15 s (about 6 s of it gunicorn loading NetBox); `start` when
# running, under a second; `stop`, 3-4 s.
set -euo pipefail

NB_VERSION=${NODENET_NETBOX_VERSION:-4.7.3}  # pinned: the schema fix-ups below are checked against it
CACHE=${NODENET_NETBOX_CACHE:-$HOME/.cache/nodenet-netbox}
PORT=${NODENET_NETBOX_PORT:-8765}
# Its own Redis port, so `stop` never shuts down a Redis that someone else runs.
REDIS_PORT=${NODENET_NETBOX_REDIS_PORT:-6380}
# Three sync workers: two cores serve two requests at once; the third keeps a
# quick request from queueing behind a slow one. About 220 MB each.
WORKERS=${NODENET_NETBOX_WORKERS:-3}
DB=${NODENET_NETBOX_DB:-netbox}
# fast: tables from the models, plus what migrations add beyond them (below);
# migrate: NetBox's 336 migrations (5-20 minutes here). Both are then cached.
SCHEMA=${NODENET_NETBOX_SCHEMA:-fast}
# Bump when the schema recipe changes, so an old dump is not reused.
RECIPE=1

VENV=$CACHE/venv
ROOT=$CACHE/root  # NETBOX_ROOT: conf/configuration.py lives here
RUN=$CACHE/run    # pid and log files of the servers started here
DUMP=$CACHE/netbox-$NB_VERSION-r$RECIPE.dump
TOKEN_FILE=$DUMP.token  # the API token inside that dump
MARK="nodenet-netbox $NB_VERSION r$RECIPE"  # COMMENT ON DATABASE once the schema and token are complete
export NETBOX_ROOT=$ROOT PGPASSWORD=netbox DEBIAN_FRONTEND=noninteractive

log() { printf '[netbox.sh %3ss] %s\n' "$SECONDS" "$*" >&2; }
die() { log "error: $*"; exit 1; }

apt_install() {
    [ -n "${apt_updated:-}" ] || { apt-get update -qq; apt_updated=1; }
    apt-get install -y -qq "$@" >/dev/null
}

# Python >= 3.12 (NetBox 4.7's floor): NODENET_NETBOX_PYTHON, else the newest
# pyenv 3.12+, else python3.12/3.13 on PATH.
find_python() {
    local p
    if [ -n "${NODENET_NETBOX_PYTHON:-}" ]; then echo "$NODENET_NETBOX_PYTHON"; return; fi
    for p in $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -V -r) \
             $(command -v python3.13 python3.12 2>/dev/null); do
        "$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && { echo "$p"; return; }
    done
    die "no Python >= 3.12 (set NODENET_NETBOX_PYTHON)"
}

# The machine's PostgreSQL cluster (the first one pg_lsclusters lists).
pg_cluster() {
    command -v pg_lsclusters >/dev/null || return 1
    read -r PG_VER PG_NAME PG_PORT PG_STATUS _ < <(pg_lsclusters -h | head -1) || return 1
    [ -n "${PG_VER:-}" ]
}
pg_super() { (cd / && runuser -u postgres -- psql -p "$PG_PORT" -v ON_ERROR_STOP=1 -qAtX "$@"); }

install() {
    mkdir -p "$CACHE" "$RUN" "$ROOT/conf"
    pg_cluster || { log "installing postgresql"; apt_install postgresql; pg_cluster || die "no PostgreSQL cluster"; }
    command -v redis-server >/dev/null || { log "installing redis-server"; apt_install redis-server; }

    # pip: about 60 s (download and install of ~100 packages, 550 MB);
    # gunicorn comes with the wheel as a dependency.
    if [ "$("$VENV/bin/netbox" version 2>/dev/null)" != "$NB_VERSION" ]; then
        log "venv + netbox==$NB_VERSION (pip, about a minute)"
        [ -x "$VENV/bin/python" ] || "$(find_python)" -m venv "$VENV"
        "$VENV/bin/pip" install -q --disable-pip-version-check "netbox==$NB_VERSION"
    fi

    pg_start
    if [ -z "$(pg_super -c "SELECT 1 FROM pg_roles WHERE rolname = 'netbox'")" ]; then
        pg_super -c "CREATE ROLE netbox LOGIN PASSWORD 'netbox'"
    fi
    if [ -z "$(pg_super -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" ]; then
        pg_super -c "CREATE DATABASE \"$DB\" OWNER netbox"
    fi
    write_config
}

pg_start() {
    pg_cluster || die "no PostgreSQL cluster (run install)"
    if [ "$PG_STATUS" != online ]; then
        log "starting PostgreSQL $PG_VER/$PG_NAME"
        # 9: the lock, which PostgreSQL's daemons would hold for as long as
        # they run (the next start would wait for it in vain).
        pg_ctlcluster "$PG_VER" "$PG_NAME" start 9>&-
        pg_cluster
    fi
}

# Our own configuration.py (rather than `netbox setup`'s template, which
# is to be edited by hand). Secrets are per cache: a loopback test instance.
write_config() {
    [ -s "$CACHE/secret" ] || (umask 077; head -c 600 /dev/urandom | tr -dc 'A-Za-z0-9' | head -c 60 >"$CACHE/secret")
    local secret; secret=$(cat "$CACHE/secret")
    cat >"$ROOT/conf/configuration.py.tmp" <<EOF
# Written by nodenet's .ci/netbox.sh: a NetBox for tests on loopback.
ALLOWED_HOSTS = ['*']
DATABASES = {'default': {
    'ENGINE': 'django.db.backends.postgresql', 'NAME': '$DB',
    'USER': 'netbox', 'PASSWORD': 'netbox', 'HOST': '127.0.0.1', 'PORT': '$PG_PORT',
    'CONN_MAX_AGE': 300,
}}
REDIS = {
    'tasks':   {'HOST': '127.0.0.1', 'PORT': $REDIS_PORT, 'USERNAME': '', 'PASSWORD': '', 'DATABASE': 0, 'SSL': False},
    'caching': {'HOST': '127.0.0.1', 'PORT': $REDIS_PORT, 'USERNAME': '', 'PASSWORD': '', 'DATABASE': 1, 'SSL': False},
}
SECRET_KEY = '$secret'
API_TOKEN_PEPPERS = {1: '$secret'}
DEBUG = False
# No calls home: the machine has no internet.
CENSUS_REPORTING_ENABLED = False
RELEASE_CHECK_URL = None
EOF
    mv "$ROOT/conf/configuration.py.tmp" "$ROOT/conf/configuration.py"
}

redis_start() {
    if redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; then return; fi
    log "starting Redis on 127.0.0.1:$REDIS_PORT"
    # No persistence: NetBox uses it as a cache and task queue only.
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --daemonize yes --save '' --appendonly no \
        --dir "$RUN" --pidfile "$RUN/redis.pid" --logfile "$RUN/redis.log" 9>&-
    # (Within a minute: at nice 19 beside the lab it waits for a core.)
    for _ in $(seq 600); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && return; sleep 0.1; done
    die "Redis did not start within a minute ($RUN/redis.log)"
}

db_ready() {
    [ -s "$TOKEN_FILE" ] &&
        [ "$(pg_super -c "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = '$DB'")" = "$MARK" ]
}

db_recreate() {
    pg_super -c "DROP DATABASE IF EXISTS \"$DB\" WITH (FORCE)" -c "CREATE DATABASE \"$DB\" OWNER netbox"
}

db_mark() { pg_super -c "COMMENT ON DATABASE \"$DB\" IS '$MARK'"; }

# The schema, an admin user and a v1 API token, built once and kept as a
# pg_dump (1.2 MB): restoring it takes 2-5 s, where building takes 10 s
# (fast) or 5-20 minutes (migrate).
build_schema() {
    local token
    token=$(head -c 600 /dev/urandom | tr -dc 'A-Za-z0-9' | head -c 40)
    db_recreate
    if [ "$SCHEMA" = fast ]; then
        log "schema: tables from the models + migration extras (about 10 s)"
        write_fastschema
        if ! NB_TOKEN=$token "$VENV/bin/netbox" shell -c "exec(open('$CACHE/fastschema.py').read())" >"$RUN/schema.log" 2>&1; then
            tail -20 "$RUN/schema.log" >&2
            log "the fast schema failed; falling back to NetBox's migrations"
            SCHEMA=migrate; db_recreate
        fi
    fi
    if [ "$SCHEMA" = migrate ]; then
        log "schema: netbox migrate (336 migrations, 5-20 minutes on two cores)"
        "$VENV/bin/netbox" migrate --no-input >"$RUN/schema.log" 2>&1 || { tail -20 "$RUN/schema.log" >&2; die "migrate failed"; }
        write_fastschema
        NB_TOKEN=$token NB_ONLY_TOKEN=1 "$VENV/bin/netbox" shell -c "exec(open('$CACHE/fastschema.py').read())" >>"$RUN/schema.log" 2>&1 ||
            { tail -20 "$RUN/schema.log" >&2; die "creating the admin user and token failed"; }
    fi
    grep -h '^fastschema:' "$RUN/schema.log" >&2 || true
    pg_dump -Fc -h 127.0.0.1 -p "$PG_PORT" -U netbox -d "$DB" -f "$DUMP.tmp"
    echo "$token" >"$TOKEN_FILE.tmp"
    mv "$DUMP.tmp" "$DUMP"; mv "$TOKEN_FILE.tmp" "$TOKEN_FILE"
    log "schema cached: $DUMP"
}

restore_schema() {
    log "schema: restoring $DUMP"
    db_recreate
    pg_restore --exit-on-error --no-owner -j 2 -h 127.0.0.1 -p "$PG_PORT" -U netbox -d "$DB" "$DUMP"
}

schema() {
    if db_ready; then return; fi
    if [ -s "$DUMP" ] && [ -s "$TOKEN_FILE" ]; then restore_schema; else build_schema; fi
    db_mark
}

# Why not a plain `migrate --run-syncdb` with MIGRATION_MODULES off: the
# tables need the natural_sort collation and the ltree extension first, and
# the result silently lacks what NetBox's migrations install besides tables:
# 45 PostgreSQL triggers (ltree paths of regions, roles, locations, …: without
# them hierarchy filters return nothing; denormalized site/region columns) and
# the 8 seed module type profiles. So this runs syncdb, then exactly those
# operations, taken from NetBox's own migration files in dependency order, and
# records every migration as applied. On 4.7.3 the result matched a migrated
# database: columns, constraints, indexes, triggers, functions, rows of every
# table, django_migrations, and the REST responses (only some constraint and
# index names differ, kept from renamed tables in migrated databases).
write_fastschema() {
    cat >"$CACHE/fastschema.py" <<'EOF'
import os, time
from django.apps import apps as global_apps
from django.contrib.postgres.operations import CreateCollation, CreateExtension
from django.core.management import call_command
from django.db import connection, migrations
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.test.utils import override_settings
from users.models import Token, User


class NoMigrations(dict):
    def __contains__(self, item):
        return True

    def __getitem__(self, item):
        return None


if not os.environ.get('NB_ONLY_TOKEN'):
    t0 = time.time()
    loader = MigrationLoader(connection)
    plan = []
    for leaf in sorted(loader.graph.leaf_nodes()):
        for node in loader.graph.forwards_plan(leaf):
            if node not in plan:
                plan.append(node)
    ops = [(key, op) for key in plan for op in loader.graph.nodes[key].operations]
    with connection.schema_editor() as editor:
        for key, op in ops:
            if isinstance(op, (CreateExtension, CreateCollation)):
                op.database_forwards(key[0], editor, None, None)
    with override_settings(MIGRATION_MODULES=NoMigrations()):
        call_command('migrate', run_syncdb=True, interactive=False, verbosity=0)
    t1 = time.time()
    extra = 0
    with connection.schema_editor() as editor:
        for key, op in ops:
            if type(op).__name__ in ('InstallLtreeTriggers', 'ReinstallLtreeTriggers', 'InstallDenormalizationTrigger'):
                op.database_forwards(key[0], editor, None, None)
                extra += 1
            elif isinstance(op, migrations.RunPython) and op.code.__name__ == 'load_initial_data':
                op.code(global_apps, editor)  # seed rows; the other data migrations only convert old rows
                extra += 1
    recorder = MigrationRecorder(connection)
    recorder.ensure_schema()
    names = set(plan)
    for key in plan:
        names.update(loader.graph.nodes[key].replaces or ())
    recorder.Migration.objects.bulk_create([recorder.Migration(app=a, name=n) for a, n in sorted(names)])
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal")
        triggers = cursor.fetchone()[0]
    if triggers == 0 or extra == 0:
        raise SystemExit(f'fastschema: expected triggers and seed data, got {triggers} triggers, {extra} extra operations')
    print(f'fastschema: syncdb {t1 - t0:.1f}s, then {extra} operations from the migrations ({triggers} triggers), '
          f'{len(names)} migrations recorded')

user, _ = User.objects.get_or_create(username='admin', defaults={'is_superuser': True})
user.is_superuser = True
user.set_password('admin')
user.save()
Token(user=user, version=1, token=os.environ['NB_TOKEN'], description='nodenet tests').save()
EOF
}

gunicorn_pid() {
    local pid
    pid=$(cat "$RUN/gunicorn.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

api_status() {  # prints the HTTP code of /api/status/ with the token
    curl -s -o "${1:-/dev/null}" -w '%{http_code}' --max-time 10 \
        -H "Authorization: Token $(cat "$TOKEN_FILE" 2>/dev/null)" "http://127.0.0.1:$PORT/api/status/" || true
}

gunicorn_start() {
    if gunicorn_pid >/dev/null && [ "$(api_status)" = 200 ]; then return; fi
    gunicorn_stop
    if curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/"; then
        die "port $PORT is taken by another server (set NODENET_NETBOX_PORT)"
    fi
    log "starting gunicorn on 127.0.0.1:$PORT ($WORKERS workers)"
    # --preload: the app (6 CPU-s to import) loads once and the workers fork
    # from it: first answer in about 6 s, against 7-10 s and 12-18 CPU-s when
    # each worker loads its own. --no-control-socket: gunicorn 26 would
    # otherwise share one socket path ($HOME/.gunicorn) between instances.
    # In the background of its own session rather than --daemon: its pid is
    # known at once (with --preload, --daemon writes the pid file only after
    # the app has loaded), and it outlives this script.
    # --timeout 600: a worker is killed only after 10 minutes on one
    # request. Beside the lab, at nice 19, a request waits for a core while
    # the lab's VMs keep both busy, for minutes at worst.
    setsid "$VENV/bin/gunicorn" netbox.wsgi --bind "127.0.0.1:$PORT" --workers "$WORKERS" --preload \
        --timeout 600 --no-control-socket --pid "$RUN/gunicorn.pid" \
        >>"$RUN/gunicorn.log" 2>&1 </dev/null 9>&- &  # 9: the lock, not to be held by servers
    local pid=$! i
    echo "$pid" >"$RUN/gunicorn.pid"
    # Its 6 CPU-seconds of loading take minutes at nice 19 beside the lab.
    local deadline=$((SECONDS + 600))
    until [ "$(api_status)" = 200 ]; do
        kill -0 "$pid" 2>/dev/null || { tail -30 "$RUN/gunicorn.log" >&2; die "gunicorn exited"; }
        [ "$SECONDS" -lt "$deadline" ] || { tail -30 "$RUN/gunicorn.log" >&2; die "NetBox did not answer within 600 s"; }
        sleep 0.1
    done
}

gunicorn_stop() {
    local pid
    pid=$(gunicorn_pid) || { rm -f "$RUN/gunicorn.pid"; return 0; }
    log "stopping gunicorn ($pid)"
    kill "$pid"
    # After TERM each worker spends about 9 CPU-seconds exiting and the master
    # waits for them (10-12 s in all): give in-flight requests a second, then
    # kill the server's process group (setsid made the master its leader).
    for _ in $(seq 10); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        if [ "$(ps -o pgid= -p "$pid" | tr -d ' ')" = "$pid" ]; then kill -KILL -- "-$pid"; else kill -KILL "$pid"; fi
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$RUN/gunicorn.pid"
}

redis_stop() {
    local pid
    pid=$(cat "$RUN/redis.pid" 2>/dev/null) || return 0
    if kill -0 "$pid" 2>/dev/null; then
        log "stopping Redis ($pid)"
        kill "$pid"
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$RUN/redis.pid"
}

# PostgreSQL, Redis and gunicorn each leave the caller's session
# (pg_ctl, --daemonize, setsid): each is a scheduler autogroup of its own,
# at nice 0 whatever the caller's nice, and groups share the CPU by
# their own nice. Started from the suite's low-priority lane they took
# CPU from the lab's VMs at equal weight: about one core for the two
# minutes of the round-trip test (137 CPU-s in gunicorn, more in
# PostgreSQL's backends). NODENET_NETBOX_NICE gives their groups, and
# them, that nice (the backends PostgreSQL forks later inherit it).
servers_nice() {
    local n=${NODENET_NETBOX_NICE:-} pid
    [ -n "$n" ] || return 0
    for pid in $(pgrep -u postgres postgres || true) $(cat "$RUN/redis.pid" 2>/dev/null || true) \
        $(gunicorn_pid || true) $(pgrep -P "$(gunicorn_pid || echo 0)" || true); do
        echo "$n" >"/proc/$pid/autogroup" 2>/dev/null || true
        renice -n "$n" -p "$pid" >/dev/null 2>&1 || true
        ionice -c 3 -p "$pid" 2>/dev/null || true
    done
}

# One start/reset at a time per cache. Bounded, so a holder that never ends
# (a server of an older copy of this script that inherited the lock) gives
# an error, not a hang; the servers themselves never inherit fd 9.
take_lock() {
    exec 9>"$CACHE/start.lock"
    flock -w 300 9 || die "another netbox.sh start/reset holds $CACHE/start.lock (fuser -v it)"
}

write_env() {
    printf 'NETBOX_URL=http://127.0.0.1:%s\nNETBOX_TOKEN=%s\n' "$PORT" "$(cat "$TOKEN_FILE")" >"$CACHE/env.tmp"
    mv "$CACHE/env.tmp" "$CACHE/env"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
install)
    install ;;
start)
    mkdir -p "$CACHE"
    take_lock
    install
    redis_start
    schema
    gunicorn_start
    servers_nice
    write_env
    log "NetBox $NB_VERSION at http://127.0.0.1:$PORT (env: $CACHE/env)" ;;
reset)
    mkdir -p "$CACHE"
    take_lock
    install
    running=$(gunicorn_pid || true)
    gunicorn_stop
    pg_super -c "COMMENT ON DATABASE \"$DB\" IS NULL" 2>/dev/null || true  # not ready: schema() rebuilds it
    schema
    if [ -n "$running" ]; then redis_start; gunicorn_start; servers_nice; write_env; fi ;;
stop)
    gunicorn_stop
    redis_stop ;;
status)
    rc=0
    if pg_cluster; then echo "postgresql: $PG_VER/$PG_NAME port $PG_PORT $PG_STATUS"; else echo "postgresql: none"; rc=3; fi
    if [ "${PG_STATUS:-}" = online ] && db_ready; then echo "database: $DB ready ($MARK)"; else echo "database: $DB not ready"; rc=3; fi
    [ -s "$DUMP" ] && echo "cache: $DUMP" || echo "cache: none"
    if redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; then echo "redis: 127.0.0.1:$REDIS_PORT up"; else echo "redis: down"; rc=3; fi
    if pid=$(gunicorn_pid); then
        code=$(api_status "$RUN/status.json")
        echo "gunicorn: pid $pid, /api/status/ -> $code $(grep -o '"netbox-version":"[^"]*"' "$RUN/status.json" 2>/dev/null || true)"
        [ "$code" = 200 ] || rc=3
    else
        echo "gunicorn: down"; rc=3
    fi
    exit $rc ;;
manage)
    exec "$VENV/bin/netbox" "$@" ;;
*)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2 ;;
esac
