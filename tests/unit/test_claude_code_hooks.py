"""The pure parts of the Claude Code hook program (``integrations/claude-code/scripts/cairn_hook.py``):
settings, the requests it builds from Claude Code's hook inputs, the output it makes of Cairn's
answers, the last turn of a transcript and the notices. Its runs against the local stack are in
``tests/e2e/test_integrations_claude_code.py``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[2] / "integrations" / "claude-code" / "scripts" / "cairn_hook.py"
_spec = importlib.util.spec_from_file_location("cairn_hook", PATH)
assert _spec and _spec.loader
hook = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hook)


def test_the_program_imports_only_the_standard_library():
    import ast
    import sys
    tree = ast.parse(PATH.read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert names - {"__future__"} <= set(sys.stdlib_module_names)


def test_settings_default_to_a_two_second_request_and_a_three_second_deadline():
    cfg = hook.settings({"CAIRN_URL": "http://x:1/", "CAIRN_TOKEN": "t"})
    assert cfg == {"url": "http://x:1", "token": "t", "bank": None, "timeout": 2.0, "deadline": 3.0}
    cfg = hook.settings({"CAIRN_HOOK_TIMEOUT": "0.5", "CAIRN_HOOK_DEADLINE": "1.5", "CAIRN_BANK": "main"})
    assert (cfg["timeout"], cfg["deadline"], cfg["bank"]) == (0.5, 1.5, "main")
    for bad in ("abc", "0", "-1", "1000"):
        assert hook.settings({"CAIRN_HOOK_TIMEOUT": bad})["timeout"] == 2.0


def test_prompt_request_carries_the_prompt_session_and_bank():
    body = hook.prompt_request({"session_id": "s1", "prompt": "Which day?", "hook_event_name": "UserPromptSubmit"},
                               "main")
    assert body == {"messages": [{"role": "user", "content": "Which day?"}], "metadata": {"memory_bank": "main"},
                    "step": 0, "session_id": "s1"}
    assert hook.prompt_request({"prompt": "x"}, None)["metadata"] == {}
    with pytest.raises(hook.HookFailure):
        hook.prompt_request({"session_id": "s1"}, None)


def test_context_output_joins_the_rules_and_the_memory_message():
    answer = {"mutations": {"system_prompt_append": "\n\n# Memory\n## style\nBe brief.\n",
                            "append_messages": [{"role": "user", "content": "<memory bank=\"m\">\n- A\n</memory>"}]},
              "retrieval": "bm25-entity"}
    assert hook.context_output(answer) == {"hookSpecificOutput": {
        "hookEventName": "UserPromptSubmit",
        "additionalContext": "# Memory\n## style\nBe brief.\n\n<memory bank=\"m\">\n- A\n</memory>"}}
    assert hook.context_output({"mutations": {}, "retrieval": "rules-only"}) == {}


def test_a_rate_limited_turn_keeps_its_rules_and_says_so():
    # the pre-generate hook never fails on the rate limit: it injects the rules only
    answer = {"mutations": {"system_prompt_append": "## style\nBe brief."}, "retrieval": "rules-only+rate_limited"}
    out = hook.context_output(answer)
    assert out["hookSpecificOutput"]["additionalContext"] == "## style\nBe brief."
    assert out["systemMessage"] == "Cairn memory: recall skipped (rate_limited)."
    assert hook.refusal(429, json.dumps({"error": "Too many requests.", "code": "rate_limited"}).encode()) == \
        "rate limited (rate_limited: Too many requests.)."
    assert hook.refusal(502, b"<html>bad gateway</html>") == "error 502 (502)."


def _line(kind: str, uid: str, content: object, **extra: object) -> str:
    return json.dumps({"type": kind, "uuid": uid, "message": {"role": kind, "content": content}, **extra})


def test_last_turn_is_the_last_prompt_and_the_assistants_text_after_it():
    lines = [_line("user", "u0", "old question"), _line("assistant", "a0", [{"type": "text", "text": "old"}]),
             _line("user", "u1", [{"type": "text", "text": "Remember that I like tea."}]),
             _line("assistant", "a1", [{"type": "tool_use", "id": "t", "name": "Read", "input": {}}]),
             _line("user", "u2", [{"type": "tool_result", "tool_use_id": "t", "content": "file"}]),
             _line("user", "u3", "<command-name>/clear</command-name>", isMeta=True),
             "not json", _line("assistant", "a2", [{"type": "text", "text": "Noted."}])]
    key, messages = hook.last_turn(lines, "ignored: the transcript has the reply")
    assert key == "u1"
    assert messages == [{"role": "user", "content": "Remember that I like tea."},
                        {"role": "assistant", "content": "Noted."}]
    # a transcript that lags behind: the Stop input's last_assistant_message stands in
    key, messages = hook.last_turn(lines[:3], "Noted, tea.")
    assert messages[-1] == {"role": "assistant", "content": "Noted, tea."}
    assert hook.last_turn([], "Only this.") == (None, [{"role": "assistant", "content": "Only this."}])


def test_turn_request_needs_a_session_and_some_messages():
    lines = [_line("user", "u1", "Remember that I like tea.")]
    body = hook.turn_request({"session_id": "s", "last_assistant_message": "Ok."}, lines, "main")
    assert body == {"session_id": "s", "turn_id": "u1", "status": "completed", "metadata": {"memory_bank": "main"},
                    "messages": [{"role": "user", "content": "Remember that I like tea."},
                                 {"role": "assistant", "content": "Ok."}], "exchange": True}
    # without a prompt's uuid the turn id is a digest of the messages: a retried Stop sends the same
    a = hook.turn_request({"session_id": "s", "last_assistant_message": "Ok."}, [], None)
    b = hook.turn_request({"session_id": "s", "last_assistant_message": "Ok."}, [], None)
    assert a["turn_id"] == b["turn_id"] and len(a["turn_id"]) == 32
    with pytest.raises(hook.HookFailure, match="no session_id"):
        hook.turn_request({"last_assistant_message": "Ok."}, lines, None)
    with pytest.raises(hook.HookFailure, match="could not be read"):
        hook.turn_request({"session_id": "s"}, [], None)


def test_handle_turns_every_failure_into_a_one_line_notice(monkeypatch):
    cfg = hook.settings({})
    assert hook.handle("stop", "[]", cfg) == {
        "systemMessage": "Cairn memory: the hook input is not a JSON object, nothing recalled or saved."}

    def boom(*_a: object) -> dict:
        raise RuntimeError("unexpected")

    monkeypatch.setattr(hook, "prompt_request", boom)
    assert hook.handle("user-prompt-submit", "{}", cfg) == {
        "systemMessage": "Cairn memory: hook error (RuntimeError), nothing recalled or saved."}
    assert hook.notice("two\nlines  here") == {"systemMessage": "Cairn memory: two lines here"}


def test_read_tail_keeps_whole_lines_of_a_long_transcript(tmp_path, monkeypatch):
    monkeypatch.setattr(hook, "MAX_TRANSCRIPT_BYTES", 64)
    p = tmp_path / "t.jsonl"
    p.write_text("".join(f'{{"n": {i}, "pad": "xxxxxxxx"}}\n' for i in range(10)))
    lines = hook.read_tail(str(p))
    assert lines and all(json.loads(line)["pad"] for line in lines)
    assert json.loads(lines[-1])["n"] == 9
    assert hook.read_tail(str(tmp_path / "missing.jsonl")) == [] and hook.read_tail(None) == []
