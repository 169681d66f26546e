"""The Claude Code plugin's hook programs (``integrations/claude-code/scripts/cairn_hook.py``)
run as Claude Code runs them: a process reading the hook input on stdin, against the local stack,
a stopped stack, and a server that accepts connections and never answers. Every run must exit 0
with one JSON object on stdout (Claude Code's hook output).

The inputs are Claude Code's documented hook inputs: the common fields ``session_id``,
``transcript_path``, ``cwd``, ``permission_mode``, ``hook_event_name``; UserPromptSubmit's
``prompt``; Stop's ``stop_hook_active`` and ``last_assistant_message``. The transcript is a
session file in Claude Code's JSONL shape (``type``, ``uuid``, ``message.role``,
``message.content`` as a string or blocks, tool calls and their results between)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from .harness import ROOT

HOOK = ROOT / "integrations" / "claude-code" / "scripts" / "cairn_hook.py"
BANK = "e2e-claude-code"

PROMPT_INPUT = {"session_id": "0d1f6f4e-5b55-4c1e-9d5a-2f0b7f8e1a11",
                "transcript_path": "~/.claude/projects/-home-dev-shop/0d1f6f4e-5b55-4c1e-9d5a-2f0b7f8e1a11.jsonl",
                "cwd": "/home/dev/shop", "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
                "prompt": "Which day do I deploy the shop?"}
STOP_INPUT = {"session_id": "0d1f6f4e-5b55-4c1e-9d5a-2f0b7f8e1a11", "transcript_path": "",
              "cwd": "/home/dev/shop", "permission_mode": "default", "hook_event_name": "Stop",
              "stop_hook_active": False, "last_assistant_message": "Noted: you deploy on Fridays."}


def transcript_lines(session: str) -> list[dict[str, Any]]:
    """A session file's entries for one finished turn with a tool call inside it."""
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/shop", "sessionId": session,
            "version": "2.1.0", "gitBranch": "main"}
    return [
        {**base, "parentUuid": None, "type": "user", "uuid": "u-0", "timestamp": "2026-12-07T10:00:00.000Z",
         "message": {"role": "user", "content": "Hi"}},
        {**base, "parentUuid": "u-0", "type": "assistant", "uuid": "a-0", "timestamp": "2026-12-07T10:00:01.000Z",
         "message": {"id": "msg_0", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "text", "text": "Hello!"}], "stop_reason": "end_turn"}},
        {**base, "parentUuid": "a-0", "type": "user", "uuid": "u-1", "timestamp": "2026-12-07T10:01:00.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "Remember that I deploy on Fridays."}]}},
        {**base, "parentUuid": "u-1", "type": "assistant", "uuid": "a-1", "timestamp": "2026-12-07T10:01:01.000Z",
         "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read",
                                  "input": {"file_path": "/home/dev/shop/deploy.sh"}}], "stop_reason": "tool_use"}},
        {**base, "parentUuid": "a-1", "type": "user", "uuid": "u-2", "timestamp": "2026-12-07T10:01:02.000Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                  "content": "#!/bin/sh\n./ship"}]}},
        {**base, "parentUuid": "u-2", "type": "assistant", "uuid": "a-2", "timestamp": "2026-12-07T10:01:03.000Z",
         "message": {"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "text", "text": "Noted: you deploy on Fridays."}],
                     "stop_reason": "end_turn"}},
    ]


def run_hook(event: str, payload: dict[str, Any] | str, env: dict[str, str]) -> tuple[int, dict[str, Any], str]:
    """Run the hook program as Claude Code does; ``(exit code, stdout's JSON object, stderr)``."""
    raw = payload if isinstance(payload, str) else json.dumps(payload)
    proc = subprocess.run([sys.executable, str(HOOK), event], input=raw, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", **env}, timeout=60)
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout
    out = json.loads(lines[0])
    assert isinstance(out, dict)
    return proc.returncode, out, proc.stderr


def wait_for(fn, timeout_s: float = 60.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError("condition not met in time")


@pytest.fixture
def env(stack) -> dict[str, str]:
    return {"CAIRN_URL": stack.base_url, "CAIRN_TOKEN": stack.token, "CAIRN_BANK": BANK}


@pytest.fixture
def silent_server():
    """A TCP server that accepts every connection and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    stop.set()
    t.join()
    for c in held:
        c.close()
    srv.close()


def test_user_prompt_submit_injects_rules_and_relevant_memories(http, env):
    assert http.post("/v1/banks", json={"name": BANK}).status_code in (200, 201)
    assert http.put(f"/v1/banks/{BANK}/rules/style", json={"content": "Answer briefly."}).status_code == 200
    r = http.post(f"/v1/banks/{BANK}/memories", json={"text": "The shop deploys every Friday at noon"})
    assert r.status_code in (200, 201)
    code, out, _ = run_hook("user-prompt-submit", PROMPT_INPUT, env)
    assert code == 0
    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == "UserPromptSubmit"
    assert "## style\nAnswer briefly." in spec["additionalContext"]
    assert f'<memory bank="{BANK}">' in spec["additionalContext"]
    assert "- The shop deploys every Friday at noon" in spec["additionalContext"]
    assert "systemMessage" not in out and "decision" not in out


def test_stop_hands_the_turn_to_extraction_and_the_next_prompt_recalls_it(http, env, tmp_path):
    session = str(uuid.uuid4())
    path = tmp_path / f"{session}.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in transcript_lines(session)), encoding="utf-8")
    code, out, _ = run_hook("stop", {**STOP_INPUT, "session_id": session, "transcript_path": str(path)}, env)
    assert (code, out) == (0, {"suppressOutput": True})

    def extracted():
        r = http.get(f"/v1/banks/{BANK}/memories?limit=50")
        mems = r.json()["memories"] if r.status_code == 200 else []
        return [m for m in mems if m["source"].get("session_id") == session]

    [mem] = wait_for(extracted)
    assert mem["text"] == "The user deploys on Fridays." and mem["confidence"] == "extracted"
    code, out, _ = run_hook("user-prompt-submit", {**PROMPT_INPUT, "session_id": session}, env)
    assert code == 0 and "- The user deploys on Fridays." in out["hookSpecificOutput"]["additionalContext"]


def test_a_stopped_stack_leaves_the_prompt_alone_with_a_notice(env):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    down = {**env, "CAIRN_URL": f"http://127.0.0.1:{port}"}
    for event, payload in (("user-prompt-submit", PROMPT_INPUT), ("stop", STOP_INPUT)):
        code, out, _ = run_hook(event, payload, down)
        assert code == 0
        assert list(out) == ["systemMessage"]
        assert out["systemMessage"].startswith(f"Cairn memory: Cairn at http://127.0.0.1:{port} did not answer")
        assert "\n" not in out["systemMessage"]


def test_a_server_that_never_answers_times_out_with_a_notice(env, silent_server):
    silent = {**env, "CAIRN_URL": silent_server, "CAIRN_HOOK_TIMEOUT": "0.5"}
    for event, payload in (("user-prompt-submit", PROMPT_INPUT), ("stop", STOP_INPUT)):
        code, out, _ = run_hook(event, payload, silent)
        assert code == 0
        assert out == {"systemMessage": f"Cairn memory: Cairn at {silent_server} did not answer (no answer in time)."}
    # the overall deadline holds even when the HTTP timeout is longer
    code, out, _ = run_hook("user-prompt-submit", PROMPT_INPUT,
                            {**silent, "CAIRN_HOOK_TIMEOUT": "30", "CAIRN_HOOK_DEADLINE": "1"})
    assert (code, out) == (0, {"systemMessage": "Cairn memory: no answer within 1 s; the turn goes on without it."})


def test_a_refused_token_and_bad_input_are_notices_never_failures(env):
    bad = {**env, "CAIRN_TOKEN": "cairn_not_a_token"}
    code, out, _ = run_hook("user-prompt-submit", PROMPT_INPUT, bad)
    assert code == 0 and out["systemMessage"].startswith("Cairn memory: the token was refused (unauthorized")
    code, out, _ = run_hook("stop", STOP_INPUT, bad)
    assert code == 0 and out["systemMessage"].startswith("Cairn memory: the token was refused")
    code, out, _ = run_hook("user-prompt-submit", "{not json", env)
    assert (code, out) == (0, {"systemMessage": "Cairn memory: the hook input is not JSON, nothing recalled or saved."})
    code, out, _ = run_hook("user-prompt-submit", PROMPT_INPUT, {"CAIRN_BANK": BANK})
    assert out == {"systemMessage": "Cairn memory: CAIRN_URL and CAIRN_TOKEN are not set, nothing recalled or saved."}
    code, out, _ = run_hook("user-prompt-submit", PROMPT_INPUT, {**env, "CAIRN_BANK": "Not A Bank!"})
    assert code == 0 and out["systemMessage"] == "Cairn memory: recall skipped (invalid-bank-name)."


def test_the_plugin_wires_both_hooks_and_the_mcp_server():
    plugin = ROOT / "integrations" / "claude-code"
    manifest = json.loads((plugin / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "cairn"
    hooks = json.loads((plugin / "hooks" / "hooks.json").read_text())["hooks"]
    for event, arg in (("UserPromptSubmit", "user-prompt-submit"), ("Stop", "stop")):
        [entry] = hooks[event]
        [hook] = entry["hooks"]
        assert hook["type"] == "command" and hook["command"].endswith(f'/scripts/cairn_hook.py" {arg}')
        assert "${CLAUDE_PLUGIN_ROOT}" in hook["command"]
    mcp = json.loads((plugin / ".mcp.json").read_text())["mcpServers"]["cairn"]
    assert mcp == {"type": "http", "url": "${CAIRN_URL}/mcp", "headers": {"Authorization": "Bearer ${CAIRN_TOKEN}"}}
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    assert market["plugins"][0]["source"] == "./integrations/claude-code"
    assert Path(HOOK).read_text().splitlines()[0] == "#!/usr/bin/env python3"
