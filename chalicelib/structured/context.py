"""Per-turn relevance injection and nudges (the seed's "BM25
relevance injection" and "Nudges").

``POST /v1/api/sessions/{id}/context {messages}`` -> ``{system_message, injected, candidates,
nudge}``:

1. the session's visibility envelope is resolved with live project access (``scopes``);
2. the context is the last 3 user messages, newest first (text parts of multi-part content
   included), joined by newlines;
3. the envelope's namespaces are read once (one consistent BatchGetItem): the hint's count and
   the ranking both come from that read;
4. BM25F ranks every live memory of the envelope as one corpus (``memories.recall``: statistics
   global to the envelope, never a recent window), ``fetch_limit`` candidates re-ranked;
5. the top ``relevance_k`` are rendered (``render``) and touched once, all in one write;
6. the hint names ``in_scope``; ``candidates`` says how many memories were scored.

Memory disabled for the session (persona off) -> empty ``system_message``, no touches, no nudge.
Nudges: a correction in the newest user message (``no, ...``, ``actually ...``, ``don't ...``,
``that's not ...``, ``I meant ...``) or the first turn of a session resuming a workstream; at most
one nudge of a type per ``nudge_cooldown`` seconds per session (a conditional write, so
concurrent turns cannot both nudge); ``nudges = false`` turns them off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape

from pydantic import ConfigDict, Field

from .. import patterns, timing
from ..auth.principal import Principal
from ..clock import now_ms
from ..validation import Model
from . import memories, objects, scopes, sessions
from .memories import Row

CONTEXT_MESSAGES = 3
MAX_INJECTED_CHARS = 500
MAX_QUERY_CHARS = 4000  # the recall core's query limit; a long context is cut, never rejected
MAX_HITS = 100  # the recall core's largest limit
HINT = "You have {count} {noun} in scope. Use memory(action='search') or memory(action='list') for more."
NUDGES = {
    "correction": ("The user just corrected you. If the correction reflects a lasting preference or lesson, "
                   "save it with memory(action='save', type='feedback')."),
    "resume": ("You are resuming an earlier workstream. Use memory(action='list') or memory(action='search') "
               "to recall what was saved before, and save lasting decisions as you go."),
}
_S = f"[{patterns.SPACE}]"
CORRECTION_RE = patterns.compile(rf"(?i)^{_S}*(?:no{_S}*,|(?:actually|don'?t|do not|that'?s not|that is not|i meant)"
                                 rf"{patterns.AFTER_WORD})")
_ATTR = {'"': "&quot;"}
_BREAKS = patterns.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


class ContextRequest(Model):
    """Body of ``POST /v1/api/sessions/{id}/context``: chat messages ``{role, content}`` where
    content is a string or a list of parts (``{type: "text", text}`` parts are read)."""

    model_config = ConfigDict(extra="forbid")
    messages: list[dict[str, Any]] = Field(default_factory=list, max_length=10000)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content
                         if isinstance(p, dict) and p.get("type", "text") == "text" and isinstance(p.get("text"), str))
    return ""


def user_context(messages: list[dict[str, Any]]) -> list[str]:
    """The texts of the last ``CONTEXT_MESSAGES`` user messages, newest first."""
    out = []
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "user":
            out.append(_text(m.get("content")))
            if len(out) == CONTEXT_MESSAGES:
                break
    return out


def render_line(m: Row) -> str:
    """One ``  <memory name=".." type=".." scope=".." description="..">content</memory>\\n`` line:
    attributes and content XML-escaped, line breaks in content become spaces, content over 500
    characters becomes its first 500 and ``...``; no description attribute when it is empty."""
    content = m.content
    if len(content) > MAX_INJECTED_CHARS:
        content = content[:MAX_INJECTED_CHARS] + "..."
    content = _BREAKS.sub(" ", content)
    attrs = f'name="{escape(m.name, _ATTR)}" type="{escape(m.type, _ATTR)}" scope="{escape(m.scope, _ATTR)}"'
    if m.description:
        attrs += f' description="{escape(_BREAKS.sub(" ", m.description), _ATTR)}"'
    return f"  <memory {attrs}>{escape(content, _ATTR)}</memory>\n"


def render(rows: list[Row], in_scope: int) -> str:
    """The system message: ``""`` when ``rows`` is empty, else ``<memories>`` block, a blank line
    and the hint naming ``in_scope``, the live memories of the session's visibility envelope."""
    if not rows:
        return ""
    hint = HINT.format(count=in_scope, noun="memory" if in_scope == 1 else "memories")
    return "<memories>\n" + "".join(render_line(r) for r in rows) + "</memories>\n\n" + hint


def _claim_nudge(org_id: str, session_id: str, kind: str, cooldown_s: int, *, once: bool) -> bool:
    """Record a nudge of ``kind`` unless one was given within ``cooldown_s`` (or ever, ``once``);
    True when this turn may nudge. Conditional put: concurrent turns cannot both win."""
    now = now_ms()
    return objects.claim(org_id, "nudge", (session_id, kind), {"type": kind}, now=now,
                         not_since=None if once else now - cooldown_s * 1000)


def _nudge(org_id: str, s: sessions.Session, texts: list[str], tuning: Any) -> str | None:
    if not tuning.nudges:
        return None
    if texts and CORRECTION_RE.match(texts[0]) and _claim_nudge(org_id, s.session_id, "correction",
                                                               tuning.nudge_cooldown, once=False):
        return NUDGES["correction"]
    if s.resumed and _claim_nudge(org_id, s.session_id, "resume", tuning.nudge_cooldown, once=True):
        return NUDGES["resume"]
    return None


@dataclass(frozen=True)
class Turn:
    """One turn's injection: the ``system_message``, the rows injected, ``candidates`` (the
    memories that matched the context), ``in_scope`` (the live memories of the session's
    visibility envelope, what the hint tells the model) and the ``nudge`` text, if any."""

    system_message: str = ""
    injected: list[Row] = field(default_factory=list)
    candidates: int = 0
    in_scope: int = 0
    nudge: str | None = None


def turn(p: Principal, session_id: str, req: ContextRequest) -> Turn:
    """One turn's injection (module docstring); memory disabled for the session is an empty ``Turn``."""
    from ..tuning import get_tuning

    with timing.phase("session"):
        s = sessions.require(p, session_id)
        if not s.memory_enabled:
            return Turn()
        targets = scopes.session_envelope(p.org_id, s)
    tuning = get_tuning()
    texts = user_context(req.messages)
    query = "\n".join(t for t in texts if t.strip())[:MAX_QUERY_CHARS]
    injected: list[Row] = []
    candidates = 0
    with timing.phase("bank"):
        rows = memories.read_heads(p.org_id, targets)  # the turn's one consistent read
    in_scope = memories.count_live(p.org_id, targets, rows=rows)
    if query.strip():
        limit = min(MAX_HITS, max(tuning.fetch_limit, tuning.relevance_k))
        with timing.phase("rank"):
            result = memories.recall(p.org_id, targets, query, limit=limit, rows=rows)
        candidates = result.candidates
        top = [h.memory for h in result.hits if h.memory.live][:tuning.relevance_k]
        injected = [memories.row(m) for m in top]  # the message shows no touch counters: none read
        with timing.phase("touch"):
            memories.touch(p.org_id, [r.memory_id for r in injected])
    with timing.phase("render"):
        message = render(injected, in_scope)
    return Turn(message, injected, candidates, in_scope, _nudge(p.org_id, s, texts, tuning))
