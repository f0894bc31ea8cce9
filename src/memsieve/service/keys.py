"""API keys: which namespaces each key may use. Keys are compared in constant time."""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping
from pathlib import Path

from memsieve.errors import ConfigError, NotFound


class Keys:
    """``{"KEY": ["namespace", ...], ...}``: a request is bound to the namespaces its key
    grants, and to nothing else."""

    def __init__(self, grants: Mapping[str, list[str]]) -> None:
        if not isinstance(grants, Mapping) or not grants:
            raise ConfigError("keys: expected a JSON object mapping each API key to a list of "
                              "namespaces")
        self._grants: list[tuple[bytes, frozenset[str]]] = []
        for key, namespaces in grants.items():
            if not isinstance(key, str) or len(key) < 16:
                raise ConfigError("keys: every API key must be a string of 16 or more "
                                  "characters")
            if not isinstance(namespaces, list) or not namespaces or not all(
                    isinstance(n, str) and n for n in namespaces):
                raise ConfigError("keys: every key needs a non-empty list of namespaces")
            self._grants.append((key.encode(), frozenset(namespaces)))

    @classmethod
    def load(cls, path: str | Path) -> Keys:
        path = Path(path)
        if not path.is_file():
            raise NotFound(f"no keys file at {path}")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ConfigError(f"{path}: not a JSON object of keys ({err})") from None
        return cls(data)

    def namespaces(self, presented: str) -> frozenset[str] | None:
        """The namespaces granted to ``presented``, or None for an unknown key. Every stored key
        is compared, each in constant time, so timing tells nothing about which one matched."""
        given = presented.encode()
        found: frozenset[str] | None = None
        for key, namespaces in self._grants:
            if hmac.compare_digest(key, given):
                found = namespaces
        return found
