"""Typed errors. Messages are written for the user: the CLI prints them as they are."""

from __future__ import annotations


class MemsieveError(Exception):
    """Base of every error memsieve raises on purpose; its message is shown to the user."""


class ConfigError(MemsieveError, ValueError):
    """Bad input or configuration: a wrong field, value, format name or option."""


class NotFound(MemsieveError, KeyError):
    """A named thing (memory, file, dataset) does not exist."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "not found"


class StoreError(MemsieveError):
    """The store cannot be opened, read or written."""


class MissingDependency(MemsieveError, ImportError):
    """An optional dependency is not installed; the message names the install command."""


class AccessDenied(MemsieveError):
    """The caller may not do this: its API key does not grant the namespace (HTTP 403)."""


class Unauthorized(AccessDenied):
    """No API key, or one the service does not know (HTTP 401)."""
