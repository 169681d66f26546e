"""The MCP tool registry a model drives unaided: every parameter typed and described with an
example, snake_case names only, and every ``*_id``/``*_ids`` parameter traceable to a tool whose
output schema carries the value. ``problems`` is checked on the real registry and, to prove it can
fail, on broken copies of it."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from pydantic import BaseModel, Field

from chalicelib.api import mcp_tools
from chalicelib.api.mcp_tools import TOOLS, IdSource, Param, Tool, definition

SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


def _typed(schema: dict[str, Any]) -> bool:
    """True when ``schema`` names a JSON type: ``type``, an ``enum``, or ``anyOf`` of typed parts."""
    if "type" in schema or "enum" in schema or "const" in schema:
        return True
    parts = schema.get("anyOf") or schema.get("oneOf")
    return bool(parts) and all(_typed(p) for p in parts)


def _carries(schema: dict[str, Any], path: str) -> bool:
    """True when the dotted ``path`` leads to a property of ``schema`` (arrays and anyOf crossed)."""
    head, _, rest = path.partition(".")
    nodes = [schema]
    while nodes:
        node = nodes.pop()
        nodes += node.get("anyOf", []) + node.get("oneOf", [])
        if "items" in node:
            nodes.append(node["items"])
        prop = node.get("properties", {}).get(head)
        if prop is not None and (not rest or _carries(prop, rest)):
            return True
    return False


def problems(tools: dict[str, Tool]) -> list[str]:
    """What a model could not work out from the registry ``tools``, one line each."""
    found = []
    for name, tool in tools.items():
        schema = definition(name)["inputSchema"]
        for param, prop in schema.get("properties", {}).items():
            where = f"{name}.{param}"
            if not SNAKE.match(param):
                found.append(f"{where}: not snake_case")
            if not _typed(prop):
                found.append(f"{where}: no type")
            if len(prop.get("description", "")) < 10:
                found.append(f"{where}: no description")
            if not prop.get("examples"):
                found.append(f"{where}: no example")
            if param.endswith(("_id", "_ids")):
                source = tool.id_sources.get(param)
                if source is None:
                    found.append(f"{where}: names no tool that gives it")
                elif source.tool not in tools:
                    found.append(f"{where}: its source {source.tool} is no tool")
                elif not _carries(definition(source.tool)["outputSchema"], source.field):
                    found.append(f"{where}: {source.tool}'s output has no {source.field}")
    return found


@pytest.fixture
def registry(monkeypatch) -> dict[str, Tool]:
    """A copy of the registry in its place, for a test to break (the schema cache cleared around it)."""
    copy = dict(TOOLS)
    monkeypatch.setattr(mcp_tools, "TOOLS", copy)
    mcp_tools._definition.cache_clear()
    yield copy
    mcp_tools._definition.cache_clear()


def _redefined(registry: dict[str, Tool], name: str, **changes: Any) -> None:
    """Tool ``name`` replaced in ``registry`` by a copy with ``changes``."""
    registry[name] = dataclasses.replace(registry[name], **changes)
    mcp_tools._definition.cache_clear()


def test_the_registry_has_no_problem():
    assert problems(TOOLS) == []


class _Untyped(BaseModel):
    anything: Any = Field(None, description="Something or other, untyped.")


class _CamelId(BaseModel):
    spaceId: str = Field(description="A space, named the old way.", examples=["spc_1"])


def test_an_untyped_parameter_is_a_problem(registry):
    _redefined(registry, "bank_list", arguments=_Untyped, params={"anything": Param("Anything at all.", 1)})
    assert problems(registry) == ["bank_list.anything: no type"]


def test_an_undescribed_parameter_is_a_problem(registry):
    _redefined(registry, "memory_recall", params={})  # its REST model describes none of its fields
    found = problems(registry)
    assert "memory_recall.query: no description" in found and "memory_recall.query: no example" in found


def test_a_camel_case_argument_is_a_problem(registry):
    _redefined(registry, "space_list", arguments=_CamelId, id_sources={})
    assert "space_list.spaceId: not snake_case" in problems(registry)


def test_an_id_without_a_producing_tool_is_a_problem(registry):
    _redefined(registry, "team_search", id_sources={})
    assert problems(registry) == ["team_search.space_ids: names no tool that gives it"]
    _redefined(registry, "team_search", id_sources={"space_ids": IdSource("space_lister", "spaces.id")})
    assert problems(registry) == ["team_search.space_ids: its source space_lister is no tool"]


def test_an_id_its_producing_tool_does_not_output_is_a_problem(registry):
    _redefined(registry, "team_search", id_sources={"space_ids": IdSource("space_list", "spaces.space_id")})
    assert problems(registry) == ["team_search.space_ids: space_list's output has no spaces.space_id"]
    del registry["space_list"]
    _redefined(registry, "team_search")
    assert "team_search.space_ids: its source space_list is no tool" in problems(registry)


def test_a_structured_session_id_comes_from_the_session_listing():
    assert TOOLS["structured_memory"].id_sources["session_id"] == IdSource("session_list", "sessions.session_id")
    listing = TOOLS["session_list"]
    assert listing.read_only and listing.view.__name__ == "list_sessions"  # GET /v1/api/sessions, its checks
    assert "session_list" in definition("structured_memory")["inputSchema"]["properties"]["session_id"]["description"]


def test_the_deprecated_camel_case_names_are_read_but_never_advertised():
    for name, old, new in (("team_search", "spaceIds", "space_ids"), ("team_draft", "spaceId", "space_id"),
                           ("team_draft", "entryId", "entry_id")):
        props = definition(name)["inputSchema"]["properties"]
        assert old not in props and "deprecated" in props[new]["description"], (name, old)
    args = TOOLS["team_search"].arguments.model_validate({"spaceIds": ["spc_1"], "query": "q"})
    assert args.model_dump(by_alias=True)["spaceIds"] == ["spc_1"]  # the REST body's name
