"""docs/mcp.md stays true: its tool reference is the one generated from the registry (``make
mcp-docs``), its tool table is the registry's (names, permissions, annotations) and it names every
protocol version the server speaks."""

from __future__ import annotations

import re
from pathlib import Path

from chalicelib.api.mcp_tools import TOOLS

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"


def _rows() -> dict[str, list[str]]:
    table = DOC.read_text().split("| tool |", 1)[1].split("\n\n", 1)[0]  # the table of tools, not the parameters
    rows = re.findall(r"^\| `([a-z_]+)` \|(.*)\|$", table, flags=re.M)
    return {name: [c.strip() for c in rest.split("|")] for name, rest in rows}


def test_the_committed_tool_reference_is_the_generated_one():
    from chalicelib.api.mcp_docs import render
    text = DOC.read_text()
    assert render(text) == text, "docs/mcp.md is stale: run `make mcp-docs`"


def test_a_changed_tool_makes_the_reference_stale(monkeypatch):
    import dataclasses

    from chalicelib.api import mcp_docs, mcp_tools
    text = DOC.read_text()
    changed = dataclasses.replace(TOOLS["space_list"], description="Lists spaces, differently.")
    monkeypatch.setitem(mcp_docs.TOOLS, "space_list", changed)
    mcp_tools._definition.cache_clear()
    assert mcp_docs.render(text) != text
    mcp_tools._definition.cache_clear()


def test_the_tool_table_is_the_registry():
    rows = _rows()
    assert list(rows) == list(TOOLS), "docs/mcp.md lists the tools in registry order"
    yes = {True: "yes", False: "no"}
    for name, tool in TOOLS.items():
        _, permission, read_only, destructive, idempotent = rows[name]
        assert permission == (f"`{tool.permission}`" if tool.permission else "space grants"), name
        assert (read_only, destructive, idempotent) == (yes[tool.read_only], yes[tool.destructive],
                                                        yes[tool.idempotent]), name


def test_every_protocol_version_spoken_is_named():
    from chalicelib.api.mcp_protocol import SUPPORTED_VERSIONS
    text = DOC.read_text()
    assert all(f"`{v}`" in text for v in SUPPORTED_VERSIONS)
