"""docs/mcp.md stays true: its tool table is the registry's (names, permissions, annotations) and
it names every protocol version the server speaks."""

from __future__ import annotations

import re
from pathlib import Path

from chalicelib.api.mcp_tools import TOOLS

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"


def _rows() -> dict[str, list[str]]:
    rows = re.findall(r"^\| `([a-z_]+)` \|(.*)\|$", DOC.read_text(), flags=re.M)
    return {name: [c.strip() for c in rest.split("|")] for name, rest in rows}


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
