"""Anthropic's memory tool kept in Cairn (``cairn_client.anthropic``) against the local stack.

The model is a recording: each turn of ``RECORDED_TURNS`` is the ``tool_use`` blocks an assistant
message carried. A stand-in Messages API (an ``httpx2`` mock transport inside the ``anthropic``
SDK's own client; no model, no network) answers the SDK's tool runner with those turns in order,
so the SDK itself dispatches every call to the tool and sends back its ``tool_result`` blocks.
The same recording runs against the SDK's local-filesystem reference implementation
(``BetaLocalFilesystemMemoryTool``) and against ``CairnMemoryTool`` / ``AsyncCairnMemoryTool``;
their results and error texts must be equal, except directory sizes in listings (the reference
shows its file system's, Cairn always ``4K``)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
from anthropic.tools import BetaLocalFilesystemMemoryTool
from cairn_client import AsyncCairn, Cairn, as_data
from cairn_client.anthropic import MAX_FILE_CHARS, AsyncCairnMemoryTool, CairnMemoryTool

M = "/memories"
# one assistant turn per row: the memory tool inputs the model sent, in order
RECORDED_TURNS: list[list[dict[str, Any]]] = [
    [{"command": "view", "path": M}],
    [{"command": "create", "path": f"{M}/notes.md", "file_text": "Project Apollo\nDeploy on Fridays\n"}],
    [{"command": "create", "path": f"{M}/notes.md", "file_text": "again"},
     {"command": "view", "path": f"{M}/notes.md"}],
    [{"command": "view", "path": f"{M}/notes.md", "view_range": [2, -1]},
     {"command": "str_replace", "path": f"{M}/notes.md", "old_str": "Fridays", "new_str": "Mondays"},
     {"command": "str_replace", "path": f"{M}/notes.md", "old_str": "Sundays", "new_str": "x"}],
    [{"command": "create", "path": f"{M}/team/people.md", "file_text": "Alice\nBob\nAlice\n"},
     {"command": "str_replace", "path": f"{M}/team/people.md", "old_str": "Alice", "new_str": "Carol"},
     {"command": "create", "path": f"{M}/team/roles/lead.txt", "file_text": "Alice leads"}],
    [{"command": "insert", "path": f"{M}/notes.md", "insert_line": 1, "insert_text": "Owner: Alice\n"},
     {"command": "insert", "path": f"{M}/notes.md", "insert_line": 99, "insert_text": "x"},
     {"command": "insert", "path": f"{M}/team/roles/lead.txt", "insert_line": 1, "insert_text": "since 2025"},
     {"command": "view", "path": f"{M}/team/roles/lead.txt"}],
    [{"command": "view", "path": M}, {"command": "view", "path": f"{M}/team"}],
    [{"command": "rename", "old_path": f"{M}/notes.md", "new_path": f"{M}/archive/2025/notes.md"},
     {"command": "rename", "old_path": f"{M}/nope.md", "new_path": f"{M}/team/x.md"},
     {"command": "rename", "old_path": f"{M}/team/people.md", "new_path": f"{M}/team/roles/lead.txt"},
     {"command": "rename", "old_path": M, "new_path": f"{M}/x"}],
    [{"command": "rename", "old_path": f"{M}/team", "new_path": f"{M}/crew"},
     {"command": "view", "path": f"{M}/crew/roles/lead.txt"}, {"command": "view", "path": f"{M}/team"}],
    [{"command": "delete", "path": f"{M}/archive/2025/notes.md"}, {"command": "view", "path": M}],
    [{"command": "delete", "path": f"{M}/crew"}, {"command": "delete", "path": f"{M}/crew"},
     {"command": "delete", "path": M}, {"command": "delete", "path": f"{M}/"}],
    [{"command": "view", "path": f"{M}/../etc/passwd"}, {"command": "view", "path": "/etc/passwd"},
     {"command": "create", "path": f"{M}/a/../../escape.md", "file_text": "x"},
     {"command": "view", "path": f"{M}/missing.md"}, {"command": "str_replace", "path": f"{M}/archive",
                                                      "old_str": "a", "new_str": "b"},
     {"command": "insert", "path": f"{M}/missing.md", "insert_line": 0, "insert_text": "x"}],
    [{"command": "create", "path": f"{M}/empty.md", "file_text": ""}, {"command": "view", "path": f"{M}/empty.md"},
     {"command": "insert", "path": f"{M}/empty.md", "insert_line": 0, "insert_text": "first"},
     {"command": "create", "path": f"{M}/café/日本.md", "file_text": "Grüße, 東京\r\nline two"},
     {"command": "create", "path": f"{M}/./dots//x.md", "file_text": "  padded text \n\n"},
     {"command": "view", "path": f"{M}/dots/x.md"}, {"command": "create", "path": f"{M}/.hidden.md",
                                                     "file_text": "secret"}],
    [{"command": "str_replace", "path": f"{M}/café/日本.md", "old_str": "line two", "new_str": "line 2\nline 3"},
     {"command": "view", "path": f"{M}/café/日本.md", "view_range": [1, 2]}, {"command": "view", "path": M},
     {"command": "view", "path": f"{M}/"}],
]
_DIR_LINE = re.compile(r"^\S+\t(.*)$")


class RecordedModel:
    """The Messages API as a recording: each POST /v1/messages answers the next turn's tool
    calls (then a closing text), and the request bodies the SDK sent are kept."""

    def __init__(self, turns: list[list[dict[str, Any]]]) -> None:
        self.turns = list(turns)
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/messages", request.url
        self.requests.append(json.loads(request.content))
        n = len(self.requests)
        if n <= len(self.turns):
            content = [{"type": "tool_use", "id": f"toolu_{n:02d}_{i:02d}", "name": "memory", "input": call}
                       for i, call in enumerate(self.turns[n - 1])]
            stop = "tool_use"
        else:
            content, stop = [{"type": "text", "text": "Noted."}], "end_turn"
        return httpx2.Response(200, json={
            "id": f"msg_{n:02d}", "type": "message", "role": "assistant", "model": "claude-recorded",
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}})

    def results(self) -> list[tuple[str, bool]]:
        """Every ``tool_result`` the SDK sent back, in the order of the calls: ``(text, is_error)``."""
        found: dict[str, tuple[str, bool]] = {}
        for body in self.requests:
            for msg in body["messages"]:
                if msg["role"] != "user" or isinstance(msg["content"], str):
                    continue
                for block in msg["content"]:
                    if block.get("type") == "tool_result":
                        content = block["content"]
                        text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
                        found[block["tool_use_id"]] = (text, bool(block.get("is_error")))
        return [found[k] for k in sorted(found)]


def run_sync(tool: Any, turns: list[list[dict[str, Any]]] = RECORDED_TURNS) -> list[tuple[str, bool]]:
    model = RecordedModel(turns)
    client = anthropic.Anthropic(api_key="recorded", base_url="http://model.invalid",
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(model)))
    runner = client.beta.messages.tool_runner(model="claude-recorded", max_tokens=1024, tools=[tool],
                                              messages=[{"role": "user", "content": "Keep notes."}])
    final = runner.until_done()
    assert final.stop_reason == "end_turn"
    return model.results()


async def run_async(tool: Any, turns: list[list[dict[str, Any]]] = RECORDED_TURNS) -> list[tuple[str, bool]]:
    model = RecordedModel(turns)
    client = anthropic.AsyncAnthropic(api_key="recorded", base_url="http://model.invalid",
                                      http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(model)))
    runner = client.beta.messages.tool_runner(model="claude-recorded", max_tokens=1024, tools=[tool],
                                              messages=[{"role": "user", "content": "Keep notes."}])
    final = await runner.until_done()
    assert final.stop_reason == "end_turn"
    return model.results()


def normalized(results: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """Directory sizes in listings as ``4K`` (the reference's come from its file system)."""
    out = []
    for text, is_error in results:
        if text.startswith("Here're the files and directories"):
            lines = text.split("\n")
            for i, line in enumerate(lines[1:], 1):
                m = _DIR_LINE.match(line)
                if m and (i == 1 or m.group(1).endswith("/")):
                    lines[i] = "4K\t" + m.group(1)
            text = "\n".join(lines)
        out.append((text, is_error))
    return out


@pytest.fixture
def cairn(stack):
    with Cairn(stack.base_url, stack.token) as c:
        yield c


@pytest.fixture
def workstream(cairn):
    """A workstream of its own for each test: its scope holds only what the test writes."""
    return as_data(cairn.workstreams.create("memory tool e2e"))["workstream_id"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The reference implementation's results for the recording (the same for every test)."""
    base = tmp_path_factory.mktemp("reference-memory")
    return run_sync(BetaLocalFilesystemMemoryTool(base_path=str(base)))


def test_the_sdk_base_classes_are_the_sdks_own():
    assert issubclass(CairnMemoryTool, BetaAbstractMemoryTool)
    assert issubclass(AsyncCairnMemoryTool, BetaAsyncAbstractMemoryTool)
    assert CairnMemoryTool.__mro__[1] is BetaAbstractMemoryTool


def test_every_command_matches_the_reference_through_the_sdk_runner(cairn, workstream, reference):
    tool = CairnMemoryTool(cairn, scope="workstream", scope_id=workstream)
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    ours = run_sync(tool)
    assert len(ours) == sum(len(t) for t in RECORDED_TURNS)
    assert sum(1 for _, err in reference if err) >= 15  # the recording exercises the error paths too
    for i, (got, want) in enumerate(zip(normalized(ours), normalized(reference), strict=True)):
        assert got == want, f"call {i}: {got!r} != {want!r}"


def test_the_async_tool_matches_the_reference_too(stack, reference):
    async def go() -> list[tuple[str, bool]]:
        async with AsyncCairn(stack.base_url, stack.token) as ac:
            ws = as_data(await ac.workstreams.create("async memory tool e2e"))["workstream_id"]
            return await run_async(AsyncCairnMemoryTool(ac, scope="workstream", scope_id=ws))

    assert normalized(asyncio.run(go())) == normalized(reference)


def test_files_are_structured_memories_a_person_can_read_and_changes_keep_one_memory(cairn, workstream):
    tool = CairnMemoryTool(cairn, scope="workstream", scope_id=workstream, prefix="claude")
    since = int(time.time() * 1000) - 1000
    run_sync(tool, [[{"command": "create", "path": f"{M}/prefs.md", "file_text": "Likes tea\n"}],
                    [{"command": "str_replace", "path": f"{M}/prefs.md", "old_str": "tea", "new_str": "coffee"}]])
    [row] = [r for r in as_data(cairn.structured.list(scope="workstream", scope_id=workstream))["memories"]
             if r["description"] == "Memory file /memories/prefs.md"]
    assert row["name"].startswith("claude_prefs_md_")
    assert row["content"] == '<!-- cairn memory file "/memories/prefs.md" -->\nLikes coffee\n\n<!-- end of file -->'
    # the edit updated the same memory (its history and id kept), audited as an update
    events = as_data(cairn.admin.memory_audit(action="memory.update", since=since, limit=500))["events"]
    assert any(e["target"] == row["memory_id"] for e in events)
    # deleted, then written again with the same text: a new live file, no conflict
    run_sync(tool, [[{"command": "delete", "path": f"{M}/prefs.md"}],
                    [{"command": "create", "path": f"{M}/prefs.md", "file_text": "Likes coffee\n"}],
                    [{"command": "view", "path": f"{M}/prefs.md"}]])
    assert tool.view(_cmd("view", path=f"{M}/prefs.md")).endswith("     1\tLikes coffee\n     2\t")


def _cmd(name: str, **fields: Any) -> Any:
    from anthropic.types.beta import BetaMemoryTool20250818ViewCommand
    assert name == "view"
    return BetaMemoryTool20250818ViewCommand(command="view", **fields)


def test_a_file_over_the_limit_and_binary_text_are_refused_and_nothing_is_written(cairn, workstream):
    tool = CairnMemoryTool(cairn, scope="workstream", scope_id=workstream)
    results = run_sync(tool, [[{"command": "create", "path": f"{M}/big.md", "file_text": "x" * (MAX_FILE_CHARS + 1)},
                               {"command": "create", "path": f"{M}/bin.md", "file_text": "a\x00b"},
                               {"command": "view", "path": M}]])
    assert results[0] == (f"File {M}/big.md would hold {MAX_FILE_CHARS + 1} characters; a memory file holds at "
                          f"most {MAX_FILE_CHARS}.", True)
    assert results[1][1] is True and "must not hold U+0000" in results[1][0]  # the service's text rule
    assert results[2] == (f"Here're the files and directories up to 2 levels deep in {M}, excluding hidden "
                          f"items:\n4K\t{M}", False)
    assert as_data(cairn.structured.list(scope="workstream", scope_id=workstream))["memories"] == []


def test_cairn_unreachable_or_refusing_is_a_tool_error_the_model_sees(stack, workstream):
    with Cairn(stack.base_url, "cairn_not_a_real_token", max_retries=0) as bad:
        tool = CairnMemoryTool(bad, scope="workstream", scope_id=workstream)
        [(text, is_error)] = run_sync(tool, [[{"command": "view", "path": f"{M}/x.md"}]])
    assert is_error and text.startswith("The memory store (Cairn) failed: 401")
    with Cairn("http://127.0.0.1:9", stack.token, max_retries=0, timeout=2) as down:
        tool = CairnMemoryTool(down, scope="workstream", scope_id=workstream)
        [(text, is_error)] = run_sync(tool, [[{"command": "view", "path": f"{M}/x.md"}]])
    assert is_error and text.startswith("The memory store (Cairn) failed:")
    with pytest.raises(ToolError, match="must start with /memories"):
        tool.view(_cmd("view", path="/tmp/x"))


def test_two_tools_with_different_prefixes_share_a_scope_without_seeing_each_other(cairn, workstream):
    a = CairnMemoryTool(cairn, scope="workstream", scope_id=workstream, prefix="alpha")
    b = CairnMemoryTool(cairn, scope="workstream", scope_id=workstream, prefix="beta")
    run_sync(a, [[{"command": "create", "path": f"{M}/a.md", "file_text": "A"}]])
    [(text, _)] = run_sync(b, [[{"command": "view", "path": M}]])
    assert text.endswith(f"\n4K\t{M}")
    with pytest.raises(ValueError, match="prefix"):
        CairnMemoryTool(cairn, prefix="Bad_Prefix")
