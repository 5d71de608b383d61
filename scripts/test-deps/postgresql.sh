#!/usr/bin/env bash
# The PostgreSQL server the store tests start a throwaway cluster of (tests/support/postgres_server.py):
# installs Debian's `postgresql` package when no initdb is there, and does nothing otherwise. The
# package's own cluster is not used (the tests initdb their own), so it is not started here.
set -euo pipefail

if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "postgresql.sh: no initdb and no apt-get: install the PostgreSQL server (initdb, pg_ctl) yourself" >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
ls /usr/lib/postgresql/*/bin/initdb >/dev/null
