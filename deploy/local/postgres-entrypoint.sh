#!/bin/sh
# Creates the cluster on first start (user, password, database from the
# environment, scram-sha-256 for every network client), then runs Postgres
# as the postgres user in the foreground.
set -eu
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

mkdir -p "$PGDATA" /var/run/postgresql
chown postgres:postgres "$PGDATA" /var/run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  chown postgres "$pwfile"
  as_pg "$bin/initdb" -D "$PGDATA" -U "$user" --pwfile="$pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    as_pg "$bin/postgres" --single -D "$PGDATA" postgres <<SQL >/dev/null
CREATE DATABASE "$db" OWNER "$user";
SQL
  fi
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups "$bin/postgres" -D "$PGDATA" -c listen_addresses='*'
