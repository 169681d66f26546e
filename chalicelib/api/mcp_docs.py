"""docs/mcp.md's tool reference, generated from the MCP registry (``mcp_tools.TOOLS``): the table of
tools with their permission and annotations, then each tool's description and parameters (type
and bounds, whether required, what it does, an example, and for an id the tool that gives it).
``make mcp-docs`` rewrites the part of docs/mcp.md between ``BEGIN`` and ``END``; a test checks
that the committed file is what this module renders.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .mcp_tools import TOOLS, Tool, definition

BEGIN = "<!-- tools: generated from the registry by `make mcp-docs`; do not edit by hand -->"
END = "<!-- end of the generated tools -->"
_BOUNDS = (("minimum", "≥ {}"), ("maximum", "≤ {}"), ("minLength", "≥ {} chars"), ("maxLength", "≤ {} chars"),
           ("minItems", "≥ {} items"), ("maxItems", "≤ {} items"))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _type(schema: dict[str, Any]) -> str:
    """A schema's type in a few words: ``integer 1..100``, ``string ≤ 64 chars``, ``"a" | "b"``,
    ``array of string``; a nullable one shows its non-null part."""
    parts = [p for p in schema.get("anyOf", [schema]) if p.get("type") != "null"]
    if len(parts) != 1:
        return " or ".join(_type(p) for p in parts)
    s = parts[0]
    if "enum" in s:
        return " \\| ".join(json.dumps(v) for v in s["enum"])
    name = s.get("type", "any")
    if name == "array":
        name = f"array of {_type(s.get('items', {}))}"
    bounds = [fmt.format(s[key]) for key, fmt in _BOUNDS if key in s]
    return " ".join([name, *bounds])


def _param_rows(tool: Tool) -> list[str]:
    schema = definition(tool.name)["inputSchema"]
    required = set(schema.get("required", []))
    rows = ["| parameter | type | required | description | example |", "|---|---|---|---|---|"]
    for name, prop in schema.get("properties", {}).items():
        text = prop.get("description", "")
        source = tool.id_sources.get(name)
        if source is not None:
            text += f" From `{source.tool}`: `{source.field}`."
        needed = "yes" if name in required else "no"
        if name == "bank" and needed == "yes":
            needed = "yes (no with a default bank)"
        example = json.dumps(prop.get("examples", [None])[0], ensure_ascii=False)
        rows.append(f"| `{name}` | {_cell(_type(prop))} | {needed} | {_cell(text)} | `{_cell(example)}` |")
    return rows


def tools_markdown() -> str:
    """The generated reference: the table of tools, then a section a tool."""
    yes = {True: "yes", False: "no"}
    lines = ["| tool | what it does | permission | read-only | destructive | idempotent |",
             "|---|---|---|---|---|---|"]
    for t in TOOLS.values():
        permission = f"`{t.permission}`" if t.permission else "space grants"
        lines.append(f"| `{t.name}` | {_cell(t.title)} | {permission} | {yes[t.read_only]} | {yes[t.destructive]} | "
                     f"{yes[t.idempotent]} |")
    for t in TOOLS.values():
        lines += ["", f"### `{t.name}`", "", t.description, "", *_param_rows(t)]
    return "\n".join(lines) + "\n"


def render(doc: str) -> str:
    """``doc`` (docs/mcp.md's text) with the generated part replaced; ValueError without the markers."""
    head, sep, rest = doc.partition(BEGIN + "\n")
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise ValueError(f"docs/mcp.md must hold the lines {BEGIN!r} and {END!r}")
    return head + BEGIN + "\n" + tools_markdown() + END + tail


if __name__ == "__main__":
    path = Path(sys.argv[1])
    path.write_text(render(path.read_text()))
