"""The inspector page in a real browser (Debian's headless Chromium; skipped where absent):
it loads the key's namespaces, runs a search and a context, and shows the exposure log."""

from __future__ import annotations

import shutil
import subprocess
from urllib.parse import quote

import pytest

from memsieve.embed import HashingEncoder
from memsieve.ingest import add_memories
from memsieve.store import open_store
from memsieve.types import Memory

from .conftest import KEY

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")


def render(url: str, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu",
                           "--virtual-time-budget=20000", *flags, url],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(BROWSER is None, reason="headless Chromium is not installed")
def test_inspector_shows_results_context_and_exposures(tmp_path, serve):
    db = tmp_path / "i.db"
    with open_store(db) as store:
        add_memories(store, [
            Memory(id="m1", namespace="sam", text="I rent a flat in Leeds.", state="stale"),
            Memory(id="m2", namespace="sam", text="We moved to York, into a house."),
            Memory(id="m3", namespace="sam", text="My doctor says my asthma is fine.",
                   policy_tags=["health"]),
            Memory(id="x1", namespace="alex", text="Alex lives in Bristol."),
        ], HashingEncoder())
    server = serve(str(db), ["sam"], "--validity", "off")
    url = f"{server.url}/inspect#key={KEY}&ns=sam&q={quote('where do I live')}"
    dom = render(url, "--dump-dom").stdout
    assert 'data-ready="yes"' in dom, dom[-2000:]
    assert "We moved to York" in dom and "Bristol" not in dom
    assert "unresolved" in dom  # the stale flat, asked with unknown intent
    assert "Memories (most relevant first)" in dom  # the assembled context
    assert "auto:" in dom and "exposure 1" in dom
    shot = tmp_path / "inspector.png"
    render(url, f"--screenshot={shot}", "--window-size=1200,900")
    assert shot.stat().st_size > 10_000
