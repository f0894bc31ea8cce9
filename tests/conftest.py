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
