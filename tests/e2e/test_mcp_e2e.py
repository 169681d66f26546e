"""The MCP endpoint driven by the SDK's own clients against the local stack: streamable HTTP
(``streamable_http_client`` with ``ClientSession``'s ``initialize`` handshake, and ``Client``'s
default negotiation, which probes ``server/discover`` at 2026-07-28) and stdio through ``cairn-mcp``
(``stdio_client``), including the README's ``mcpServers`` block. Writes are checked over REST and in
the stack's tables (``bank_seq``): a refused call commits nothing."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import requests
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from infra.local.launch import free_port

from .harness import ROOT

READ_TOOLS = {"bank_list", "memory_recall", "memory_get", "memory_list", "memory_history", "rules_list",
              "context_preview", "session_list", "space_list", "team_search"}
ALL_TOOLS = READ_TOOLS | {"bank_create", "memory_save", "memory_observe", "memory_update", "memory_forget",
                          "memory_pin", "memory_supersede", "rule_set", "session_open", "structured_memory",
                          "team_draft"}
MODERN = "2026-07-28"
CLIENT_DIR = ROOT / "clients" / "python"


def uid(prefix: str = "mcp") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def mint(http, permissions: list[str], banks: list[str] | None = None) -> str:
    body: dict[str, Any] = {"kind": "api_key", "permissions": permissions, "label": "mcp-e2e"}
    if banks is not None:
        body["banks"] = banks
    r = http.post("/v1/api/admin/tokens", json=body)
    assert r.status_code == 201, r.text
    return r.json()["token"]


def new_bank(http) -> str:
    name = uid()
    r = http.post("/v1/banks", json={"name": name})
    assert r.status_code == 201, r.text
    return name


def memories(http, bank: str) -> int:
    r = http.get(f"/v1/banks/{bank}")
    assert r.status_code == 200, r.text
    return r.json()["bank"]["memories"]


def run(coro):
    return asyncio.run(coro)


def raised(coro) -> BaseException:
    """What ``coro`` raised (it must raise)."""
    try:
        run(coro)
    except BaseException as exc:  # noqa: BLE001 - the exception is the result
        return exc
    raise AssertionError("nothing was raised")


def leaf(exc: BaseException) -> BaseException:
    """The one exception inside the task groups' exception groups."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


# --- the SDK's HTTP client -------------------------------------------------------------------

@asynccontextmanager
async def over_http(stack, token: str | None, mode: str, headers: dict[str, str] | None = None) \
        -> AsyncIterator[Any]:
    """A connected SDK client on ``/mcp``: ``mode`` "legacy" is ``ClientSession`` after
    ``initialize()``; "auto" is ``Client``'s default negotiation (``server/discover`` first)."""
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    async with create_mcp_http_client(headers=sent) as http_client:
        transport = streamable_http_client(stack.base_url + "/mcp", http_client=http_client)
        if mode == "legacy":
            async with transport as (read, write), ClientSession(read, write) as session:
                init = await session.initialize()
                assert not init.protocol_version.startswith("2026"), init.protocol_version
                yield session
        else:
            async with Client(transport, mode="auto") as client:
                assert client.protocol_version == MODERN
                yield client


async def tool_names(client) -> dict[str, Any]:
    listed = await client.list_tools()
    assert listed.next_cursor is None
    return {t.name: t for t in listed.tools}


def structured(result) -> dict[str, Any]:
    assert result.is_error is False, result
    assert result.content[0].text.strip()  # the summary a model reads first
    return result.structured_content


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_token_lists_only_the_tools_its_permissions_allow(stack, http, mode):
    reader = mint(http, ["memory:read"])

    async def go():
        async with over_http(stack, stack.token, mode) as client:
            assert set(await tool_names(client)) == ALL_TOOLS
        async with over_http(stack, reader, mode) as client:
            tools = await tool_names(client)
        assert set(tools) == READ_TOOLS
        assert all(t.annotations.read_only_hint is True for t in tools.values())

    run(go())


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_save_recall_preview_forget_and_the_forgotten_never_returns(stack, http, mode):
    bank = new_bank(http)

    async def go():
        async with over_http(stack, stack.token, mode) as c:
            saved = structured(await c.call_tool("memory_save", {
                "bank": bank, "text": "The staging database is called heron.", "entities": ["heron"]}))
            mid = saved["memory"]["id"]
            hits = structured(await c.call_tool("memory_recall", {"bank": bank, "query": "staging database"}))
            assert [h["memory"]["id"] for h in hits["memories"]] == [mid]
            preview = structured(await c.call_tool("context_preview", {"bank": bank,
                                                                       "query": "which database is staging?"}))
            assert "heron" in json.dumps(preview)
            structured(await c.call_tool("memory_forget", {"bank": bank, "memory_id": mid}))
            again = structured(await c.call_tool("memory_recall", {"bank": bank, "query": "staging database heron"}))
            assert again["memories"] == []
            preview = structured(await c.call_tool("context_preview", {"bank": bank, "query": "heron staging"}))
            assert "heron" not in json.dumps(preview)
            got = structured(await c.call_tool("memory_get", {"bank": bank, "memory_id": mid}))
            assert got["memory"]["invalid_at"] is not None
        return mid

    mid = run(go())
    rest = http.post(f"/v1/banks/{bank}/recall", json={"query": "staging database heron"}).json()
    assert mid not in json.dumps(rest)


def test_an_observed_exchange_is_extracted_by_the_worker_and_recalled(stack, http):
    """memory_observe queues the exchange; the stack's poller runs the job; recall over MCP finds it."""
    bank = uid()
    exchange = [{"role": "user", "content": "Hi! Remember that I deploy on Fridays."},
                {"role": "assistant", "content": "Got it."}]

    async def observe():
        async with over_http(stack, stack.token, "auto") as c:
            result = await c.call_tool("memory_observe", {"bank": bank, "session_id": "obs-e2e", "messages": exchange})
            assert result.content[0].text.startswith("Queued for extraction"), result
            return structured(result)

    body = run(observe())
    assert body["accepted"] is True and body["queued"] is True and body["session_id"] == "obs-e2e"
    for _ in range(240):  # the poller runs the job within seconds
        r = http.get(f"/v1/banks/{bank}/memories")
        if r.status_code == 200 and r.json()["memories"]:
            break
        time.sleep(0.25)

    async def recall():
        async with over_http(stack, stack.token, "legacy") as c:
            return structured(await c.call_tool("memory_recall", {"bank": bank, "query": "which day do I deploy"}))

    assert [h["memory"]["text"] for h in run(recall())["memories"]] == ["The user deploys on Fridays."]


def test_refused_calls_are_error_results_that_write_nothing(stack, http):
    """Bad arguments, a bank outside the token's allow-list and an invalid name: ``is_error``
    results with the stable code, and neither bank's committed changes move."""
    mine, other = new_bank(http), new_bank(http)
    confined = mint(http, ["memory:read", "memory:write"], banks=[mine])
    cases = [
        ({"bank": mine, "text": "x"}, "validation_error"),
        ({"bank": mine, "text": "A fine memory text.", "colour": "red"}, "validation_error"),
        ({"bank": other, "text": "A fine memory text."}, "forbidden"),
        ({"bank": "Not A Bank!", "text": "A fine memory text."}, "invalid_name"),
    ]
    before = {b: (memories(http, b), stack.bank_seq(b)) for b in (mine, other)}

    async def go(cases):
        got = []
        async with over_http(stack, confined, "auto") as c:
            for arguments, _ in cases:
                result = await c.call_tool("memory_save", arguments)
                assert result.is_error is True, (arguments, result)
                assert "Traceback" not in json.dumps(result.model_dump(mode="json"))
                got.append(result.structured_content["code"])
        return got

    assert run(go(cases)) == [code for _, code in cases]
    assert {b: (memories(http, b), stack.bank_seq(b)) for b in (mine, other)} == before

    async def save():  # the same checks see a write that happens
        async with over_http(stack, confined, "auto") as c:
            structured(await c.call_tool("memory_save", {"bank": mine, "text": "A fine memory text."}))

    run(save())
    count, seq = memories(http, mine), stack.bank_seq(mine)
    assert count == before[mine][0] + 1 and seq > before[mine][1]


def test_no_token_is_401_and_the_sdk_client_fails(stack):
    r = requests.post(stack.base_url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                      headers={"Accept": "application/json, text/event-stream"}, timeout=30)
    assert r.status_code == 401
    body = r.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == 1  # the request's id, read from the refused body
    assert body["error"]["code"] == -32600 and body["error"]["data"]["code"] == "unauthorized"

    async def connect(mode):
        async with over_http(stack, None, mode):
            raise AssertionError("connected without a token")

    for mode in ("legacy", "auto"):
        err = leaf(raised(connect(mode)))
        assert isinstance(err, MCPError), (mode, err)
        assert err.error.data["code"] == "unauthorized", mode


# --- stdio through cairn-mcp -----------------------------------------------------------------

@pytest.fixture(scope="module")
def cairn_mcp() -> Path:
    """The ``cairn-mcp`` console script the client package installs into the virtualenv."""
    installed = Path(sys.executable).parent / "cairn-mcp"
    assert installed.exists(), "cairn-mcp is not installed: `make venv` installs the client package"
    return installed


def bridge_env(cairn_mcp: Path, **settings: str) -> dict[str, str]:
    """The child's environment: ``settings``, this checkout's client first on the path, the
    script's folder first on PATH (so a bare ``cairn-mcp`` finds it)."""
    return {**settings, "PYTHONPATH": str(CLIENT_DIR),
            "PATH": f"{cairn_mcp.parent}{os.pathsep}{os.environ.get('PATH', '')}"}


@asynccontextmanager
async def over_stdio(params: StdioServerParameters, mode: str) -> AsyncIterator[Any]:
    if mode == "legacy":
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session
    else:
        async with Client(params, mode="auto") as client:
            assert client.protocol_version == MODERN
            yield client


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_stdio_bridge_lists_saves_to_the_default_bank_and_recalls(stack, http, cairn_mcp, mode):
    bank = new_bank(http)
    params = StdioServerParameters(command=str(cairn_mcp), env=bridge_env(
        cairn_mcp, CAIRN_URL=stack.base_url, CAIRN_TOKEN=stack.token, CAIRN_BANK=bank))

    async def go():
        async with over_stdio(params, mode) as c:
            tools = await tool_names(c)
            assert set(tools) == ALL_TOOLS
            assert "bank" not in tools["memory_save"].input_schema["required"]  # CAIRN_BANK is the default
            saved = structured(await c.call_tool("memory_save", {"text": "The release train leaves on Tuesdays."}))
            hits = structured(await c.call_tool("memory_recall", {"query": "when does the release train leave?"}))
            assert [h["memory"]["id"] for h in hits["memories"]] == [saved["memory"]["id"]]

    run(go())
    assert memories(http, bank) == 1


def test_stdio_bridge_with_a_bad_token_surfaces_unauthorized(stack, cairn_mcp):
    params = StdioServerParameters(command=str(cairn_mcp), env=bridge_env(
        cairn_mcp, CAIRN_URL=stack.base_url, CAIRN_TOKEN="cairn_not_a_token"))

    async def connect():
        async with over_stdio(params, "legacy"):
            raise AssertionError("connected with a bad token")

    err = leaf(raised(connect()))
    assert isinstance(err, MCPError), err
    assert err.error.data["code"] == "unauthorized"


def test_stdio_bridge_answers_with_an_error_when_cairn_is_unreachable(cairn_mcp):
    closed = f"http://127.0.0.1:{free_port()}"
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "e2e", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_save", "arguments": {}}}]
    env = {**os.environ, **bridge_env(cairn_mcp, CAIRN_URL=closed, CAIRN_TOKEN="cairn_unused")}
    done = subprocess.run([str(cairn_mcp)], input="".join(json.dumps(m) + "\n" for m in lines), env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    assert set(answers) == {1, 2}
    for answer in answers.values():
        assert answer["error"]["code"] == -32603 and answer["error"]["data"]["code"] == "backend_unavailable"
        assert closed in answer["error"]["message"] and "CAIRN_URL" in answer["error"]["message"]


def test_stdio_bridge_answers_every_line_that_may_be_a_request_with_cairns_verdict(stack, cairn_mcp):
    lines = ['[{"jsonrpc":"2.0","id":11,"method":"ping"}]', '{"jsonrpc":"2.0","id":21,"method":5}',
             '{"jsonrpc":"2.0","id":22}', "42", '{"jsonrpc":"2.0","id":3,"params":' + "[" * 5000 + "]" * 5000 + "}",
             '{"jsonrpc":"2.0","method":"notifications/initialized"}', '{"jsonrpc":"2.0","id":99,"method":"ping"}']
    env = {**os.environ, **bridge_env(cairn_mcp, CAIRN_URL=stack.base_url, CAIRN_TOKEN=stack.token)}
    done = subprocess.run([str(cairn_mcp)], input="".join(line + "\n" for line in lines), env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    refused = sorted((str(a["id"]), a["error"]["code"]) for a in answers if "error" in a)
    assert refused == [("21", -32600), ("22", -32600), ("None", -32700), ("None", -32600), ("None", -32600)]
    assert [a for a in answers if "result" in a] == [{"jsonrpc": "2.0", "id": 99, "result": {}}]


def test_stdio_bridge_without_settings_exits_2(cairn_mcp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    done = subprocess.run([str(cairn_mcp)], input='{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n',
                          env={**env, **bridge_env(cairn_mcp)}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert "CAIRN_URL" in done.stderr and "CAIRN_TOKEN" in done.stderr


# --- the README's configuration --------------------------------------------------------------

def readme_mcp_servers() -> dict[str, Any]:
    """The ``mcpServers`` JSON block of README.md."""
    text = (ROOT / "README.md").read_text()
    blocks = [b for b in re.findall(r"^```json\n(.*?)^```", text, flags=re.S | re.M) if '"mcpServers"' in b]
    assert len(blocks) == 1, "README.md should hold one ```json block with mcpServers"
    return json.loads(blocks[0])["mcpServers"]


def test_readme_mcp_servers_block_runs_through_stdio_client(stack, http, cairn_mcp):
    bank = new_bank(http)
    [server] = readme_mcp_servers().values()
    assert set(server["env"]) == {"CAIRN_URL", "CAIRN_TOKEN", "CAIRN_BANK"}
    actual = {"CAIRN_URL": stack.base_url, "CAIRN_TOKEN": stack.token, "CAIRN_BANK": bank}
    env = bridge_env(cairn_mcp, **actual)  # the placeholders replaced by the stack's values
    params = StdioServerParameters(command=server["command"], args=server.get("args", []), env=env)

    async def go():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert set(await tool_names(session)) == ALL_TOOLS
            structured(await session.call_tool("memory_save", {"text": "Deploys are frozen on Fridays."}))
            hits = structured(await session.call_tool("memory_recall", {"query": "deploys frozen"}))
            assert len(hits["memories"]) == 1

    run(go())
    assert memories(http, bank) == 1


# --- an agent session: every id it passes comes from an earlier result -------------------------

class Agent:
    """An SDK client that remembers every string the tools' results held, and refuses to pass an
    ``*_id``/``*_ids`` argument it has not seen in an earlier result of the same session: the ids a
    model can only get by following the tools' descriptions."""

    def __init__(self, client):
        self.client, self.seen = client, set()

    def _remember(self, value: Any) -> None:
        if isinstance(value, dict):
            for v in value.values():
                self._remember(v)
        elif isinstance(value, list):
            for v in value:
                self._remember(v)
        elif isinstance(value, str):
            self.seen.add(value)

    async def call(self, tool: str, **arguments: Any):
        for name, value in arguments.items():
            if name.endswith(("_id", "_ids")):
                values = value if isinstance(value, list) else [value]
                assert set(values) <= self.seen, f"{tool}.{name}: {values} came from no earlier result"
        result = await self.client.call_tool(tool, arguments)
        self._remember(result.structured_content)
        return result

    async def ok(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return structured(await self.call(tool, **arguments))


def person_token(http, user: str, permissions: list[str]) -> str:
    r = http.post("/v1/api/admin/tokens", json={"kind": "person", "user_id": user, "permissions": permissions,
                                                "label": "mcp-e2e"})
    assert r.status_code == 201, r.text
    return r.json()["token"]


def test_an_agent_session_drives_the_tools_with_ids_from_earlier_results(stack, http):
    user = uid("agent")
    space_name = uid("Platform")
    r = http.post("/api/v1/context/spaces", json={"name": space_name, "kind": "team"})
    assert r.status_code == 201, r.text
    r = http.put(f"/api/v1/context/spaces/{r.json()['id']}/members/{user}",
                 json={"permissions": ["context:space:read", "context:space:write"]})
    assert r.status_code == 200, r.text
    token = person_token(http, user, ["memory:read", "memory:write"])
    bank = uid("notes")
    r = http.post("/v1/api/sessions", json={"kind": "interactive"}, token=token)  # the host opened it
    assert r.status_code == 201, r.text
    hosts = r.json()["session_id"]

    async def go():
        async with over_http(stack, token, "auto") as client:
            agent = Agent(client)
            tools = await tool_names(client)
            assert tools["session_open"].input_schema["properties"]["kind"]["enum"] == ["interactive", "coordinator"]
            saved = await agent.call("memory_save", bank=bank, text="The staging database is called heron.",
                                     entities=["heron"], tags=["infra"])
            assert structured(saved)["bank_created"] is True and "created it" in saved.content[0].text
            await agent.ok("memory_save", bank=bank, text="Deploys are frozen on Fridays.", tags=["process"])
            hits = await agent.call("memory_recall", bank=bank, query="what is the staging database called")
            assert hits.content[0].text.startswith('1. "The staging database is called heron."')
            heron = structured(hits)["memories"][0]["memory"]["id"]
            pinned = await agent.ok("memory_pin", bank=bank, memory_id=heron, pinned=True)
            assert pinned["memory"]["pinned"] is True
            tagged = await agent.ok("memory_list", bank=bank, tag="process")
            assert [m["text"] for m in tagged["memories"]] == ["Deploys are frozen on Fridays."]
            # conversations in: the exchange is extracted by the stack's worker, then recalled by a filter
            observed = await agent.ok("memory_observe", bank=bank, messages=[
                {"role": "user", "content": "Hi! Remember that I prefer tabs over spaces."},
                {"role": "assistant", "content": "Got it."}])
            assert observed["accepted"] is True and observed["queued"] is True
            for _ in range(240):  # the worker runs the job within seconds
                learnt = await agent.ok("memory_recall", bank=bank, query="what do I prefer, tabs or spaces",
                                        filter={"session_id": observed["session_id"]})
                if learnt["memories"]:
                    break
                await asyncio.sleep(0.25)
            assert [h["memory"]["text"] for h in learnt["memories"]] == ["The user prefers tabs over spaces."]
            infra = await agent.ok("memory_recall", bank=bank, query="staging database and deploys",
                                   filter={"tags_any": ["infra"]})
            assert [h["memory"]["text"] for h in infra["memories"]] == ["The staging database is called heron."]

            spaces = await agent.ok("space_list")
            space = next(s["id"] for s in spaces["spaces"] if s["name"] == space_name)
            draft = await agent.ok("team_draft", space_id=space, kind="decision", title="Queue choice",
                                   text="We chose SQS FIFO for the extraction queue.")
            edited = await agent.ok("team_draft", entry_id=draft["id"], seq=draft["seq"],
                                    text="We chose SQS FIFO for the extraction queue, for ordering.")
            assert edited["id"] == draft["id"] and edited["status"] == "draft"
            found = await agent.ok("team_search", space_ids=[space], query="extraction queue")
            assert found["results"] == []  # a draft is never served before a review

            session = await agent.ok("session_open", kind="coordinator")
            child = await agent.ok("session_open", parent_session_id=session["session_id"])
            assert child["parent_session_id"] == session["session_id"]
            await agent.ok("structured_memory", session_id=session["session_id"], action="save", name="db_choice",
                           content="Billing uses Postgres.", type="reference", scope="coordinator",
                           description="Which database billing uses")
            got = await agent.ok("structured_memory", session_id=session["session_id"], action="search",
                                 query="billing database")
            assert [m["name"] for m in got["memories"]] == ["db_choice"]
            noted = await agent.ok("memory_save", bank=bank, text="Billing moved to Postgres in May.",
                                   session_id=session["session_id"])
            assert noted["bank_created"] is False and noted["memory"]["source"]["session_id"] == session["session_id"]

            listed = await agent.ok("session_list")  # the host's session, picked from a result
            picked = next(s["session_id"] for s in listed["sessions"] if s["kind"] == "interactive"
                          and s["parent_session_id"] is None)
            assert picked == hosts
            await agent.ok("structured_memory", session_id=picked, action="save", name="editor",
                           content="Uses vim.", scope="user", description="The user's editor")
            mine = await agent.ok("structured_memory", session_id=picked, action="list")
            assert "editor" in [m["name"] for m in mine["memories"]]

    run(go())


def test_a_token_without_the_grant_cannot_open_a_coordinator_session(stack, http):
    key = mint(http, ["memory:read", "memory:write"])

    async def go():
        async with over_http(stack, key, "auto") as client:
            tools = await tool_names(client)
            assert tools["session_open"].input_schema["properties"]["kind"]["enum"] == ["interactive"]
            refused = await client.call_tool("session_open", {"kind": "coordinator"})
            assert refused.is_error is True
            assert refused.structured_content["code"] == "coordinator_requires_user"
            opened = structured(await client.call_tool("session_open", {}))
            assert opened["kind"] == "interactive"
        return opened["session_id"]

    sid = run(go())
    r = http.get("/v1/api/sessions", token=key)
    assert r.status_code == 200 and [s["session_id"] for s in r.json()["sessions"]] == [sid]  # the refusal wrote none
