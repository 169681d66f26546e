"""The text content of an MCP tool result: a compact summary a model reads before (or instead of)
``structuredContent``, which keeps the REST body. Memory text comes first, times are ISO 8601 UTC,
every id a later call may need is named. Each function takes the tool's REST body (a dict) and
returns plain text; none raises on a body it does not expect (it falls back to compact JSON).
"""

from __future__ import annotations

import json
from typing import Any

from ..team.entries import iso


def compact(body: Any) -> str:
    """``body`` as one line of JSON (the fallback summary)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def _memory(m: dict[str, Any]) -> str:
    """One bank memory: ``"text" (id ...; entities ...; tags ...; pinned; state; saved <ISO>)``."""
    parts = [f"id {m.get('id')}"]
    for key in ("entities", "tags"):
        if m.get(key):
            parts.append(f"{key} {', '.join(m[key])}")
    if m.get("pinned"):
        parts.append("pinned")
    if m.get("corroboration"):
        parts.append(f"corroborated {m['corroboration']}x")
    if m.get("superseded_by"):
        parts.append(f"superseded by {m['superseded_by']}")
    elif m.get("invalid_at") is not None:
        parts.append(f"forgotten {iso(m['invalid_at'])}")
    parts.append(f"updated {iso(m.get('updated_at'))}")
    return f"\"{m.get('text', '')}\" ({'; '.join(parts)})"


def _numbered(lines: list[str], empty: str) -> str:
    return "\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1)) if lines else empty


def _more(body: dict[str, Any], text: str) -> str:
    cursor = body.get("next_cursor")
    return f"{text}\nMore: pass cursor={cursor}" if cursor else text


def memory_saved(body: dict[str, Any]) -> str:
    """``memory_save``: what happened (new, reinforced), the bank's creation, then the memory."""
    what = "Saved a new memory" if body.get("created") else "Reinforced an existing memory (same text)"
    lines = [f"{what}: {_memory(body['memory'])}" if body.get("memory") else f"{what}."]
    if body.get("bank_created"):
        lines.append("The bank did not exist: this save created it. If the bank name was misspelt, "
                     "forget this memory and save it in the intended bank (bank_list names the banks).")
    if (body.get("details") or {}).get("tags_dropped"):
        lines.append(f"Tags dropped (at most 8): {', '.join(body['details']['tags_dropped'])}")
    lines += [_related(r) for r in body.get("related") or []]
    if body.get("related_checked") is False:
        lines.append("Related memories were not checked (the bank's index is not loaded here yet); "
                     "memory_recall the subject to see whether this duplicates or contradicts a memory.")
    return "\n".join(lines)


def _related(r: dict[str, Any]) -> str:
    """One related memory of a save, with what to do about it."""
    said = f" \"{r['text']}\"" if r.get("text") else ""
    if r.get("relation") == "duplicate":
        return (f"Possible duplicate of memory {r.get('id')}{said} ({r.get('why')}). If they say the same, forget "
                f"the one saved now (memory_forget) or keep one and supersede the other.")
    if r.get("action") == "superseded":
        return (f"Contradicted memory {r.get('id')}{said} ({r.get('why')}) and retired it (the bank's "
                f"on_conflict: supersede); if that was wrong, save its text with revive: true.")
    return (f"Conflicts with memory {r.get('id')}{said} ({r.get('why')}); both are kept and linked, recall "
            f"ranks the newer first. If the new one corrects it, retire the old one: memory_supersede "
            f"id={r.get('id')} superseded_by=<the new id> (or save with supersedes next time).")


def observed(body: dict[str, Any]) -> str:
    """``memory_observe``: whether the exchange was queued, ran at once, or was refused, and its ids."""
    ids = f"bank {body.get('bank')}, session_id {body.get('session_id')}, turn_id {body.get('turn_id')}"
    if not body.get("accepted"):
        return (f"Not extracted ({body.get('reason')}): extraction is off on this deployment; use memory_save "
                f"to keep a fact ({ids}).")
    if body.get("queued"):
        return (f"Queued for extraction; memories appear in recall within seconds ({ids}). Observing the same "
                "session_id and turn_id again is a no-op.")
    out = body.get("outcome") or {}
    return (f"Extracted now ({out.get('status')}): {out.get('saved', 0)} saved, {out.get('reinforced', 0)} "
            f"reinforced, {out.get('skipped', 0)} skipped ({ids}).")


def memory(body: dict[str, Any]) -> str:
    """A ``{memory}`` body (get, update, pin, supersede, forget)."""
    return _memory(body["memory"]) if body.get("memory") else compact(body)


def recalled(body: dict[str, Any]) -> str:
    """``memory_recall``: the memories best ranked first, with their scores."""
    lines = [f"{_memory(h['memory'])} score {h.get('score', 0):.3f}" for h in body.get("memories", [])]
    return _numbered(lines, "No memory matched the query.")


def listed(body: dict[str, Any]) -> str:
    """``memory_list``: a page of memories, newest first."""
    return _more(body, _numbered([_memory(m) for m in body.get("memories", [])], "No memories."))


def history(body: dict[str, Any]) -> str:
    """``memory_history``: one line a revision, oldest first."""
    lines = [f"{r.get('op')} by {r.get('actor') or 'unknown'} at {iso(r.get('updated_at'))}: \"{r.get('text', '')}\""
             for r in body.get("revisions", [])]
    return _numbered(lines, "No revisions.")


def banks(body: dict[str, Any]) -> str:
    """``bank_list``: a bank a line with its counts (or the trash entries)."""
    lines = [f"{b['name']}: trashed {iso(b.get('trashed_at'))}, restore with trashed_to={b.get('trashed_to')}"
             if "trashed_to" in b else
             f"{b['name']}: {b.get('memories', 0)} memories, {b.get('pinned', 0)} pinned, {b.get('rules', 0)} rules"
             for b in body.get("banks", [])]
    return _more(body, _numbered(lines, "No banks."))


def bank_created(body: dict[str, Any]) -> str:
    """``bank_create``: created or already there."""
    name = (body.get("bank") or {}).get("name")
    return f"Bank '{name}' " + ("created." if body.get("created") else "already existed (nothing changed).")


def rules(body: dict[str, Any]) -> str:
    """``rules_list``: each rule's name and text."""
    lines = [f"{r['name']}: {r.get('content', '')}" for r in body.get("rules", [])]
    return "\n\n".join(lines) if lines else "No rules."


def rule_state(body: dict[str, Any]) -> str:
    """``rule_set``: whether the rule exists now."""
    return "The rule is saved." if body.get("exists") else "The rule does not exist."


def preview(body: dict[str, Any]) -> str:
    """``context_preview``: the injected text, rules then memories."""
    parts = [body.get("system_prompt_section") or "(no rules)", body.get("message") or "(no memories injected)"]
    return "\n\n".join(parts)


def structured(body: dict[str, Any]) -> str:
    """``structured_memory``: a memory row, a listing or a deletion."""
    if "memories" in body:
        lines = [f"{m.get('name')} [{m.get('scope')}/{m.get('type')}]: {m.get('description', '')}"
                 for m in body["memories"]]
        return _numbered(lines, "No memories.")
    if "memory_id" in body:
        return (f"{body.get('content', '')}\n(name {body.get('name')}; scope {body.get('scope')}; "
                f"type {body.get('type')}; memory_id {body.get('memory_id')}; updated {body.get('updated')})")
    if body.get("status") == "ok":
        return f"Deleted '{body.get('name')}'."
    return compact(body)


def team_results(body: dict[str, Any]) -> str:
    """``team_search``: each accepted entry's text with its entry id and score."""
    lines = [f"{r.get('text', '')} (entry_id {r.get('entryId')}; revision {r.get('revision')}; "
             f"score {r.get('score', 0):.3f})" for r in body.get("results", [])]
    return _numbered(lines, "No accepted entry matched.")


def team_draft(body: dict[str, Any]) -> str:
    """``team_draft``: the draft's text and the ids an edit or a review needs."""
    return (f"{body.get('text', '')}\n(entry_id {body.get('id')}; status {body.get('status')}; seq {body.get('seq')}; "
            f"documentSha256 {body.get('documentSha256')})")


def spaces(body: dict[str, Any]) -> str:
    """``space_list``: a space a line, its id first."""
    lines = [f"{s['id']}: {s.get('name')} ({s.get('kind')}, {s.get('entries', 0)} entries)"
             for s in body.get("spaces", [])]
    return _more(body, _numbered(lines, "No space is readable with this token."))


def session(body: dict[str, Any]) -> str:
    """``session_open``: the session's id and kind."""
    return f"Session {body.get('session_id')} ({body.get('kind')}) is open: pass session_id to structured_memory."


def sessions(body: dict[str, Any]) -> str:
    """``session_list``: a session a line, its id first."""
    lines = [f"{s.get('session_id')}: {s.get('kind')}"
             + (f", child of {s['parent_session_id']}" if s.get("parent_session_id") else "")
             + (f", workstream {s['workstream_id']}" if s.get("workstream_id") else "")
             + (f", project {s['project_id']}" if s.get("project_id") else "")
             for s in body.get("sessions", [])]
    return _more(body, _numbered(lines, "No session is open for this token: open one with session_open."))
