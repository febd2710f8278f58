#!/usr/bin/env bash
# A private PostgreSQL 15 + pgvector server for Casebook's tests and benchmarks, idempotently.
#
#   scripts/pg_setup.sh            -> prints the SQLAlchemy URL on stdout (progress goes to stderr)
#   export CASEBOOK_TEST_PG_URL=$(scripts/pg_setup.sh)
#
# Steps, each skipped when already done (recipe: docs/POSTGRES.md):
#   1. pgvector 0.8.0 built from Debian trixie's source package against PG15 (bookworm has none);
#   2. a cluster under $CASEBOOK_PG_ROOT initialised with trust auth (loopback only);
#   3. the server started on 127.0.0.1:$CASEBOOK_PG_PORT;
#   4. the database and the `vector` extension created.
# Not root: prints the URL only if such a server is already running, else a message and exit 0.
set -euo pipefail

PORT="${CASEBOOK_PG_PORT:-5499}"
ROOT="${CASEBOOK_PG_ROOT:-/tmp/casebook-pg}"
DB="${CASEBOOK_PG_DB:-casebook}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
URL="postgresql+psycopg://postgres@127.0.0.1:${PORT}/${DB}"
CONTROL=/usr/share/postgresql/15/extension/vector.control
DATA="$ROOT/data"
SOCK="$ROOT/sock"

say() { echo "pg_setup: $*" >&2; }
psql_() { PGOPTIONS="--client-min-messages=warning" "$PGBIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -qAt "$@"; }
ready() { "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" 2>/dev/null; }

if [ ! -x "$PGBIN/pg_ctl" ]; then
  say "PostgreSQL 15 is not installed ($PGBIN); PostgreSQL tests will be skipped."
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  if ready && psql_ -d "$DB" -c "select 1 from pg_extension where extname = 'vector'" 2>/dev/null | grep -q 1; then
    echo "$URL"
  else
    say "not root: cannot install pgvector or run a private cluster; PostgreSQL tests will be skipped."
  fi
  exit 0
fi

build_pgvector() {
  say "building pgvector 0.8.0 from Debian trixie's source package (about 75 s)"
  export DEBIAN_FRONTEND=noninteractive
  dpkg -s postgresql-server-dev-15 >/dev/null 2>&1 || {
    apt-get update -qq >&2
    apt-get install -y -qq postgresql-server-dev-15 build-essential >&2
  }
  local A=/tmp/pgv/apt URI
  mkdir -p "$A/lists/partial" "$A/cache" "$A/sp"
  # a private apt configuration: the system's own sources stay untouched
  URI=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  printf 'Types: deb-src\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$URI" >"$A/sp/src.sources"
  local O=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$A/sp" -o "Dir::State::Lists=$A/lists"
    -o "Dir::Cache=$A/cache")
  apt-get "${O[@]}" update -qq >&2
  (cd /tmp/pgv && rm -rf pgvector-* && apt-get "${O[@]}" source -qq pgvector/trixie >&2)
  local SRC
  SRC=$(find /tmp/pgv -maxdepth 1 -type d -name 'pgvector-*' | head -n1)
  make -s -C "$SRC" PG_CONFIG="$PGBIN/pg_config" >&2
  make -s -C "$SRC" PG_CONFIG="$PGBIN/pg_config" install >&2
}

[ -f "$CONTROL" ] || build_pgvector

mkdir -p "$DATA" "$SOCK"
chown postgres: "$ROOT" "$DATA" "$SOCK"
chmod 700 "$DATA"
if [ ! -f "$DATA/PG_VERSION" ]; then
  say "initialising a cluster in $DATA (trust auth, loopback only)"
  su postgres -c "$PGBIN/initdb -D $DATA -U postgres --auth=trust -E UTF8 --locale=C.UTF-8" >&2
fi

if ! ready; then
  say "starting PostgreSQL on 127.0.0.1:$PORT"
  # small shared memory and fsync kept on: tests measure what production does
  su postgres -c "$PGBIN/pg_ctl -D $DATA -l $ROOT/pg.log -w -t 60 start \
    -o '-p $PORT -k $SOCK -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_buffers=256MB'" >&2
fi

if [ -z "$(psql_ -d postgres -c "select 1 from pg_database where datname = '$DB'")" ]; then
  psql_ -d postgres -c "create database \"$DB\"" >&2
fi
psql_ -d "$DB" -c "create extension if not exists vector" >&2
psql_ -d template1 -c "create extension if not exists vector" >&2
say "ready: pgvector $(psql_ -d "$DB" -c "select extversion from pg_extension where extname = 'vector'")"
echo "$URL"
