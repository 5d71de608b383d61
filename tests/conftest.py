"""Shared fixtures for the whole suite."""

import os
import subprocess
from collections.abc import Iterator

import pytest

from tests.support.openai_server import ScriptedOpenAIServer
from tests.support.postgres_server import PostgresCluster, PostgresUnavailable


@pytest.fixture
def openai_server() -> Iterator[ScriptedOpenAIServer]:
    """A scripted OpenAI-compatible server on 127.0.0.1 (ephemeral port), stopped after the test."""
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A throwaway PostgreSQL server for the session, started on first use, removed at the end.

    Without the server binaries the tests that need it are skipped, except with ``CI=true``: there
    they fail (``scripts/test-deps/postgresql.sh`` installs the binaries)."""
    try:
        cluster = PostgresCluster().start()
    except (PostgresUnavailable, OSError, subprocess.SubprocessError) as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"PostgreSQL is required here and could not start: {exc}", pytrace=False)
        pytest.skip(f"PostgreSQL could not start: {exc}")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_dsn(
    postgres_cluster: PostgresCluster, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> str:
    """A new, empty database on the session's server; ``GREYWIND_PG_DSN`` names it for the test."""
    dsn = postgres_cluster.fresh_database(request.node.name[:30])
    monkeypatch.setenv("GREYWIND_PG_DSN", dsn)
    return dsn


def backend_ready(request: pytest.FixtureRequest, backend: str) -> None:
    """What a store backend needs before it opens in a test: a database for ``postgresql``."""
    if backend == "postgresql":
        request.getfixturevalue("postgres_dsn")
