#!/usr/bin/env python3
"""Claude Code's hooks for Cairn (Python standard library only).

``cairn_hook.py user-prompt-submit`` (the UserPromptSubmit hook) reads the hook input on stdin
(``session_id``, ``prompt``...), asks Cairn's per-turn hook (``POST /v1/hooks/pre-generate``) for
the bank's rules and the memories relevant to the prompt, and prints
``{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": ...}}``.

``cairn_hook.py stop`` (the Stop hook) reads ``session_id``, ``transcript_path`` and
``last_assistant_message``, takes the turn that just ended from the transcript (the last user
prompt and the assistant's text after it) and hands it to extraction (``POST
/v1/hooks/turn-completed``, answered 202 at once).

Neither ever blocks or fails the user's turn: whatever happens (Cairn down, a server that accepts
and never answers, a refused token, rate limited, bad input), the program prints valid output, at
worst ``{"systemMessage": "<one-line notice>"}``, and exits 0, within ``CAIRN_HOOK_DEADLINE``
seconds (default 3) whatever the network does; each HTTP request gives up after
``CAIRN_HOOK_TIMEOUT`` seconds (default 2). Settings: ``CAIRN_URL``, ``CAIRN_TOKEN``, optional
``CAIRN_BANK`` (else the service's default bank).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import urllib.error
import urllib.request
from typing import Any

DEFAULT_TIMEOUT = 2.0
DEFAULT_DEADLINE = 3.0
MAX_TRANSCRIPT_BYTES = 8 * 1024 * 1024  # the tail read to find the last turn
MAX_TEXT = 100_000  # characters of one message handed to extraction
EVENTS = {"user-prompt-submit": "UserPromptSubmit", "stop": "Stop"}


class HookFailure(Exception):
    """Why nothing was injected or handed over, as the one-line notice the user sees."""


# --- pure parts (tested in tests/unit/test_claude_code_hooks.py) ----------------------------------

def seconds(value: str | None, default: float) -> float:
    """A positive number of seconds from an environment variable, else ``default``."""
    try:
        n = float(value) if value else default
    except ValueError:
        return default
    return n if 0 < n <= 60 else default


def settings(env: dict[str, str]) -> dict[str, Any]:
    """``{url, token, bank, timeout, deadline}`` from the environment."""
    timeout = seconds(env.get("CAIRN_HOOK_TIMEOUT"), DEFAULT_TIMEOUT)
    return {"url": (env.get("CAIRN_URL") or "").rstrip("/"), "token": env.get("CAIRN_TOKEN") or "",
            "bank": env.get("CAIRN_BANK") or None, "timeout": timeout,
            "deadline": seconds(env.get("CAIRN_HOOK_DEADLINE"), DEFAULT_DEADLINE)}


def notice(text: str) -> dict[str, Any]:
    """The output that tells the user, in one line, why Cairn added nothing."""
    return {"systemMessage": "Cairn memory: " + " ".join(text.split())}


def metadata(bank: str | None) -> dict[str, Any]:
    return {"memory_bank": bank} if bank else {}


def prompt_request(event: dict[str, Any], bank: str | None) -> dict[str, Any]:
    """The pre-generate hook's body for a UserPromptSubmit input."""
    prompt = event.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise HookFailure("no prompt in the hook input, nothing recalled.")
    body: dict[str, Any] = {"messages": [{"role": "user", "content": prompt}], "metadata": metadata(bank), "step": 0}
    session = event.get("session_id")
    if isinstance(session, str) and session:
        body["session_id"] = session[:256]
    return body


def context_output(answer: dict[str, Any]) -> dict[str, Any]:
    """The UserPromptSubmit output for the pre-generate hook's answer: the rules' section and the
    ``<memory>`` message as ``additionalContext``; a notice when Cairn injected nothing for a
    reason the user should know (a bank the token may not use, rate limited)."""
    mutations = answer.get("mutations") or {}
    parts = [mutations.get("system_prompt_append") or ""]
    parts += [m.get("content", "") for m in mutations.get("append_messages") or [] if isinstance(m, dict)]
    context = "\n\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip())
    out: dict[str, Any] = {}
    if context:
        out["hookSpecificOutput"] = {"hookEventName": "UserPromptSubmit", "additionalContext": context}
    retrieval = str(answer.get("retrieval") or "")
    if retrieval.startswith("none+") or "rate_limited" in retrieval:
        out.update(notice(f"recall skipped ({retrieval.split('+', 1)[1]})."))
    return out


def _text(content: Any) -> str:
    """The text of a transcript message's content: a string, or its ``text`` blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content
                         if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    return ""


def _is_prompt(entry: dict[str, Any]) -> bool:
    """A user's own prompt (not a tool result, nor a message Claude Code added)."""
    msg = entry.get("message") or {}
    if entry.get("type") != "user" or entry.get("isMeta") or msg.get("role") != "user":
        return False
    content = msg.get("content")
    return isinstance(content, str) or (isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "text" for b in content))


def last_turn(lines: list[str], last_assistant: str | None) -> tuple[str | None, list[dict[str, str]]]:
    """``(turn key, messages)`` of the last turn in transcript ``lines`` (JSONL): the last user
    prompt and the assistant's text after it; ``last_assistant`` (the Stop input's
    ``last_assistant_message``) stands in for the assistant's text when the transcript lags."""
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    start = max((i for i, e in enumerate(entries) if _is_prompt(e)), default=None)
    messages: list[dict[str, str]] = []
    key = None
    if start is not None:
        prompt = entries[start]
        key = str(prompt.get("uuid") or prompt.get("promptId") or "") or None
        messages.append({"role": "user", "content": _text(prompt["message"]["content"])[:MAX_TEXT]})
        said = [_text((e.get("message") or {}).get("content")) for e in entries[start + 1:]
                if e.get("type") == "assistant"]
        reply = "\n".join(t for t in said if t.strip())
        if reply:
            messages.append({"role": "assistant", "content": reply[:MAX_TEXT]})
    if last_assistant and last_assistant.strip() and not any(m["role"] == "assistant" for m in messages):
        messages.append({"role": "assistant", "content": last_assistant[:MAX_TEXT]})
    return key, messages


def turn_request(event: dict[str, Any], lines: list[str], bank: str | None) -> dict[str, Any]:
    """The turn-completed hook's body for a Stop input and its transcript's lines: the last turn
    only, marked ``exchange`` so each turn of a session is read whole (not past a cursor that
    counts the session's messages)."""
    session = event.get("session_id")
    if not isinstance(session, str) or not session:
        raise HookFailure("no session_id in the hook input, the turn was not handed over.")
    last = event.get("last_assistant_message")
    key, messages = last_turn(lines, last if isinstance(last, str) else None)
    if not messages:
        raise HookFailure("the turn's messages could not be read, nothing was handed over.")
    turn = key or hashlib.sha256(json.dumps(messages).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return {"session_id": session[:256], "turn_id": turn[:256], "status": "completed",
            "metadata": metadata(bank), "messages": messages, "exchange": True}


# --- effects ----------------------------------------------------------------------------------

def post(cfg: dict[str, Any], path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST ``body`` to Cairn; the decoded answer, or ``HookFailure`` saying what went wrong."""
    if not cfg["url"] or not cfg["token"]:
        raise HookFailure("CAIRN_URL and CAIRN_TOKEN are not set, nothing recalled or saved.")
    data = json.dumps(body).encode("utf-8", "surrogatepass")
    req = urllib.request.Request(cfg["url"] + path, data=data, method="POST", headers={
        "Authorization": f"Bearer {cfg['token']}", "Content-Type": "application/json",
        "User-Agent": "cairn-claude-code-hook/1"})
    try:
        with urllib.request.urlopen(req, timeout=cfg["timeout"]) as resp:
            answer = json.loads(resp.read(4 * 1024 * 1024) or b"{}")
    except urllib.error.HTTPError as err:
        raise HookFailure(refusal(err.code, err.read(65536))) from err
    except (TimeoutError, OSError) as err:  # URLError, refused, reset, timed out
        raise HookFailure(f"Cairn at {cfg['url']} did not answer ({reason(err)}).") from err
    except ValueError as err:
        raise HookFailure(f"Cairn at {cfg['url']} sent an answer that is not JSON.") from err
    return answer if isinstance(answer, dict) else {}


def reason(err: BaseException) -> str:
    inner = getattr(err, "reason", err)
    if isinstance(inner, TimeoutError) or "timed out" in str(inner):
        return "no answer in time"
    return str(inner) or type(inner).__name__


def refusal(status: int, raw: bytes) -> str:
    """The notice for an error answer: its status, code and message."""
    try:
        body = json.loads(raw)
    except ValueError:
        body = {}
    code = body.get("code") if isinstance(body, dict) else None
    what = {401: "the token was refused", 403: "the token may not do this", 429: "rate limited"}.get(
        status, f"error {status}")
    message = body.get("error") if isinstance(body, dict) and isinstance(body.get("error"), str) else ""
    return f"{what} ({code or status}{': ' + message if message else ''})."


def read_tail(path: Any) -> list[str]:
    """The last lines of the transcript file (its tail, bounded), or ``[]``."""
    if not isinstance(path, str) or not path:
        return []
    try:
        with open(os.path.expanduser(path), "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - MAX_TRANSCRIPT_BYTES))
            data = f.read()
    except OSError:
        return []
    lines = data.decode("utf-8", "replace").splitlines()
    return lines[1:] if size > MAX_TRANSCRIPT_BYTES else lines  # the first may be cut


def handle(event_name: str, raw: str, cfg: dict[str, Any]) -> dict[str, Any]:
    """The output for one hook call (``HookFailure`` becomes a notice)."""
    try:
        try:
            event = json.loads(raw) if raw.strip() else {}
        except ValueError as err:
            raise HookFailure("the hook input is not JSON, nothing recalled or saved.") from err
        if not isinstance(event, dict):
            raise HookFailure("the hook input is not a JSON object, nothing recalled or saved.")
        if event_name == "user-prompt-submit":
            return context_output(post(cfg, "/v1/hooks/pre-generate", prompt_request(event, cfg["bank"])))
        body = turn_request(event, read_tail(event.get("transcript_path")), cfg["bank"])
        post(cfg, "/v1/hooks/turn-completed", body)
        return {"suppressOutput": True}
    except HookFailure as failure:
        return notice(str(failure))
    except Exception as err:  # noqa: BLE001 - a bug here must never fail the user's turn
        return notice(f"hook error ({type(err).__name__}), nothing recalled or saved.")


def main(argv: list[str]) -> int:
    """Run one hook within the deadline: always prints one JSON object and returns 0."""
    event_name = argv[1] if len(argv) > 1 else ""
    if event_name not in EVENTS:
        print(json.dumps(notice(f"unknown hook {event_name!r}; use user-prompt-submit or stop.")))
        return 0
    cfg = settings(dict(os.environ))
    out: list[dict[str, Any]] = []

    def work() -> None:
        out.append(handle(event_name, sys.stdin.read(), cfg))

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(cfg["deadline"])
    result = out[0] if out else notice(f"no answer within {cfg['deadline']:g} s; the turn goes on without it.")
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    code = main(sys.argv)
    os._exit(code)  # do not wait for a worker still stuck in the network
