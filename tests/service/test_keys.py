"""API keys: validation of the keys file and lookup."""

from __future__ import annotations

import json

import pytest

from memsieve.errors import ConfigError, NotFound
from memsieve.service.keys import Keys


def test_lookup_returns_the_grant_or_none():
    keys = Keys({"a" * 16: ["alice"], "b" * 16: ["bob", "shared"]})
    assert keys.namespaces("b" * 16) == {"bob", "shared"}
    assert keys.namespaces("a" * 15) is None and keys.namespaces("") is None


@pytest.mark.parametrize("grants", [{}, [], {"short": ["a"]}, {"k" * 16: []},
                                    {"k" * 16: "alice"}, {"k" * 16: [""]}])
def test_bad_grants_are_config_errors(grants):
    with pytest.raises(ConfigError):
        Keys(grants)


def test_load_from_a_file(tmp_path):
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"k" * 20: ["sam"]}))
    assert Keys.load(path).namespaces("k" * 20) == {"sam"}
    with pytest.raises(NotFound):
        Keys.load(tmp_path / "none.json")
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="not a JSON object"):
        Keys.load(path)
