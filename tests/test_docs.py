"""The README's Python example runs, the public API is what it says, every command has help."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import memsieve

README = Path(__file__).resolve().parents[1] / "README.md"


def test_public_api_is_small_and_importable():
    assert set(memsieve.__all__) == {
        "AccessMode", "Assembler", "Candidate", "Client", "ConfigError", "Context", "Intent",
        "Memory",
        "MemsieveError", "NotFound", "Pipeline", "Policy", "Query", "Response", "Result",
        "State", "StoreError", "add_memories", "get_encoder", "open_store",
    }
    for name in memsieve.__all__:
        assert getattr(memsieve, name) is not None


def test_readme_python_example_runs(tmp_path: Path):
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("1 t2")  # "Where does Sam live?" -> moved


def test_every_command_has_help():
    out = subprocess.run([sys.executable, "-m", "memsieve", "--help"], capture_output=True,
                         text=True, timeout=120).stdout
    commands = re.findall(r"^\s{2}(\w+)\s{2,}\S", out, re.M)
    assert {"ingest", "search", "context", "audit", "forget", "eval", "demo"} <= set(commands)
    for cmd in commands:
        proc = subprocess.run([sys.executable, "-m", "memsieve", cmd, "--help"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and "Usage" in proc.stdout, cmd
