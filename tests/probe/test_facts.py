"""The probe's list of fields (`facts.FIELDS`) is the list of fields the plugin reads.

The keys the plugin reads from agy's answers are collected from its wire-reading modules:
every ``.get("key")`` and every wire-spelled (lowerCamel) string constant. Each must be a key
of some row's path, or listed in `facts.ELSEWHERE` with the reason the probe does not check
it; and every key a row names must be read by one of those modules. A module that reads
lowerCamel keys must be listed below as reading agy's wire or as reading something else of
agy's, so a new reader cannot slip past the list.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from omnigent_agy.probe.facts import ELSEWHERE, FIELDS, Seen, fields_of

CORE = REPO_ROOT / "omnigent_agy"
# Modules that read agy's answers (their keys must be probed or explained).
WIRE_READERS = (
    "reading/steps.py",
    "reading/mapper.py",
    "reading/reader.py",
    "reading/rotation.py",
    "reading/context.py",
    "models/catalog.py",
    "agy/sweep.py",
    "interactions/delivery.py",
    "interactions/gates.py",
    "session/binding.py",
    "session/agy_session.py",
    "session/send.py",
    "session/workspace_check.py",
    "rpc/client.py",
    "rpc/wire.py",
    "models/quota.py",
)
# Modules whose lowerCamel keys are not agy's wire, with what they are: the probe checks
# neither agy's files (its doctor checks the seeded folder) nor what agy prints.
NOT_WIRE = {
    "agy/gemini_home.py": "agy's files (settings, onboarding, MCP config, docs/wire.md §1b)",
    "agy/launcher.py": "agy's settings file",
    "doctor/gemini_checks.py": "agy's files, as the doctor checks them",
    "relay/channel.py": "agy's MCP config",
    "relay/mcp_server.py": "MCP's JSON-RPC (the protocol agy speaks to its MCP servers)",
    "agy/trust_store.py": "agy's settings and a workspace's .agents/mcp_config.json (§9)",
    "agy/workspace_runs.py": "a workspace's .agents/mcp_config.json and hooks.json (§9, §10)",
    "models/agy_models.py": "what `agy models` prints (§9), which the doctor reads",
}
_CAMEL = re.compile(r"^[a-z]+[A-Z][A-Za-z0-9]*$")
_KEY = re.compile(r"^[a-z][A-Za-z0-9_]*$")


def keys_read(source: str) -> set[str]:
    """``.get("key")`` arguments, ``count("key")`` (steps.py's usage helper) and every
    lowerCamel string constant of a module."""
    keys: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            first = node.args[0]
            if (
                name in ("get", "count")
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and _KEY.match(first.value)
            ):
                keys.add(first.value)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _CAMEL.match(node.value)
        ):
            keys.add(node.value)
    return keys


def plugin_keys() -> dict[str, set[str]]:
    """key → the modules that read it."""
    found: dict[str, set[str]] = {}
    for module in WIRE_READERS:
        for key in keys_read((CORE / module).read_text(encoding="utf-8")):
            found.setdefault(key, set()).add(module)
    return found


def table_keys() -> set[str]:
    keys = set()
    for row in FIELDS:
        for alternative in row.path.split("|"):
            for part in alternative.split("."):
                key = part.rstrip("[]")
                if key and key != "*":
                    keys.add(key)
    return keys


def test_every_key_the_plugin_reads_is_probed_or_explained() -> None:
    unexplained = {
        key: sorted(modules)
        for key, modules in plugin_keys().items()
        if key not in table_keys() and key not in ELSEWHERE
    }
    assert unexplained == {}, "add a row to facts.FIELDS, or say in facts.ELSEWHERE why not"


def test_every_key_the_table_names_is_read_by_the_plugin() -> None:
    read = set(plugin_keys())
    assert sorted(table_keys() - read) == []
    assert sorted(set(ELSEWHERE) - read) == []


def test_a_key_is_either_probed_or_explained() -> None:
    assert sorted(table_keys() & set(ELSEWHERE)) == []


def test_every_module_reading_wire_keys_is_listed() -> None:
    listed = set(WIRE_READERS) | set(NOT_WIRE)
    for path in sorted(CORE.rglob("*.py")):
        relative = path.relative_to(CORE).as_posix()
        if relative.startswith(("probe/", "simulator/")) or relative in listed:
            continue
        camel = {k for k in keys_read(path.read_text(encoding="utf-8")) if _CAMEL.match(k)}
        assert not camel, f"{relative} reads {sorted(camel)}: list it in WIRE_READERS or NOT_WIRE"


def test_every_place_has_a_required_field_and_a_section() -> None:
    for seen in Seen:
        rows = fields_of(seen)
        assert rows, f"no row for {seen}"
        assert all(row.section.startswith("§") for row in rows)
    assert all(not row.path.startswith("?") for row in FIELDS)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('x.get("stepCount")', {"stepCount"}),
        ('count("inputTokens")', {"inputTokens"}),
        (
            'for name in ("lastUserInputTime", "createdTime"): pass',
            {"lastUserInputTime", "createdTime"},
        ),
        ('x.get("status")', {"status"}),
        ('x.get("a key with spaces")', set()),
        ('log("statusWas %s")', set()),
    ],
)
def test_the_collector_finds_reads(source: str, expected: set[str]) -> None:
    assert keys_read(source) == expected


def test_the_check_catches_a_new_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A module of the list that starts reading a field nobody probes makes the test fail."""
    fake = tmp_path / "omnigent_agy"
    for module in WIRE_READERS:
        (fake / module).parent.mkdir(parents=True, exist_ok=True)
        (fake / module).write_text((CORE / module).read_text(encoding="utf-8"))
    mapper = fake / "reading/mapper.py"
    mapper.write_text(mapper.read_text() + '\n\nX = {}.get("brandNewField")\n')
    monkeypatch.setattr(f"{__name__}.CORE", fake)
    with pytest.raises(AssertionError, match="brandNewField"):
        test_every_key_the_plugin_reads_is_probed_or_explained()
