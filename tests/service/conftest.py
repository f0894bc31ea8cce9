"""A real ``memsieve serve`` process on 127.0.0.1 for the client, browser and crash tests."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

KEY = "test-key-0123456789abcdef"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One server process over ``db``; ``start()`` again after ``kill()`` reopens the store."""

    def __init__(self, db: str, keys: Path, extra: tuple[str, ...] = ()) -> None:
        self.db, self.keys, self.extra = db, keys, extra
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 120.0) -> Server:
        import httpx

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memsieve", "serve", "--db", self.db, "--keys",
             str(self.keys), "--port", str(self.port), *self.extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.proc.stderr.read()}")
            try:
                if httpx.get(self.url + "/v1/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("server did not come up")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def serve(tmp_path: Path):
    """``serve(db, namespaces)`` starts a server whose key ``KEY`` grants ``namespaces``."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    servers: list[Server] = []

    def start(db: str, namespaces: list[str], *extra: str) -> Server:
        keys = tmp_path / f"keys{len(servers)}.json"
        keys.write_text(json.dumps({KEY: namespaces}))
        server = Server(db, keys, extra)
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()
