"""The injection renderer shared by preview and the per-turn hook. Pure: no I/O.

Two outputs:

- the **system-prompt section**: ``HEADER`` + the paragraph the bank's ``feed`` setting picks
  (``FEED_PARAGRAPHS``; ``PARAGRAPH`` when the bank does not say how it is fed), then the bank's rules in name order,
  each ``\\n## {name}\\n{rendered content}\\n``, within ``max_rule_chars`` UTF-8 bytes of rendered
  rule content counted cumulatively. The first rule that does not fit is cut on a character boundary to the
  bytes left and followed by ``\\n`` + the truncation marker when more than 200 bytes are left;
  otherwise it and every later rule become ``\\n## {name} [omitted: over the injection budget]\\n``.
  After a truncation nothing is left, so every later rule is omitted too.
  Rules are data (``rule_body``): ``& < >`` become XML character entities, inside code fences
  too (no rule can open or close a tag such as ``</memory>`` or ``<system>``); outside fences ATX
  headings are demoted by two levels (a rule's ``# X`` renders as ``### X``, under its own ``## name``) and
  setext underlines are escaped; a fence left open is closed at the rule's end, so no rule can
  swallow or forge the sections after it.
- the **memory message** (role user): ``<memory bank="{bank}">``, then the intro line and one
  ``- {text}`` line per matched memory, then (when the ambient floor padded any) the ambient
  line and one ``- {text}`` line per ambient memory, ``</memory>``: a model can tell what
  matched the message from what the bank holds regardless. Memory text is escaped as XML character entities
  (``&amp; &lt; &gt; &quot;``) and every line break becomes a space, so no memory can close or
  forge a tag or a list line.

Memories are chosen by ``select_memories``: the top ``recall_limit`` hits; when fewer than
``min(3, recall_limit)`` matched, padded up to that floor with the bank's top memories (score 0.0,
``ambient``: the ambient floor; none when the bank turns it off); then taken in order while the
cumulative UTF-8 bytes of their text fit ``recall_budget_tokens * 4`` (inclusive), stopping at
the first that does not fit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

from .. import patterns
from ..core.records import Memory

HEADER = "\n\n# Memory — bank: {bank}\n"
PARAGRAPH = ("Relevant memories are provided to you when they exist. Memories from this conversation are "
             "saved automatically when the host hands its turns to Cairn; to keep something now, use "
             "memory_save if you have that tool.\n")  # the bank does not say how it is fed
FEED_PARAGRAPHS = {  # by the bank's ``feed`` setting: the sentence never contradicts how it is fed
    "hooks": ("Relevant memories are provided to you when they exist. Memories from this conversation are "
              "saved automatically after each turn; no save call is needed.\n"),
    "tools": ("Relevant memories are provided to you when they exist. Nothing from this conversation is saved "
              "unless you save it: call memory_save for one fact to keep, or memory_observe with a finished "
              "exchange worth remembering.\n"),
    "both": ("Relevant memories are provided to you when they exist. Memories from this conversation are "
             "saved automatically after each turn; to keep something at once, call memory_save.\n"),
}
RULE = "\n## {name}\n{content}\n"
TRUNCATED = ("[rule truncated: over the {max_rule_chars} char injection budget — trim it in the console's "
             "rules view]")
OMITTED = "\n## {name} [omitted: over the injection budget]\n"
TRUNCATE_MIN_BYTES = 200  # a cut rule needs more than this many bytes left, else it is omitted
MESSAGE_OPEN = '<memory bank="{bank}">\n'
MATCHED_INTRO = "Relevant remembered memories (auto-recalled; verify anything surprising):\n"
AMBIENT_INTRO = ("Ambient memories (the bank's pinned and most corroborated; not matched to this message, "
                 "use them only if they apply):\n")
MESSAGE_LINE = "- {text}\n"
MESSAGE_CLOSE = "</memory>"
AMBIENT_FLOOR = 3
BYTES_PER_TOKEN = 4

# Every character str.splitlines() breaks on (\r\n counts as one break).
_LINE_BREAKS = patterns.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


class Rule(TypedDict):
    """One rule of a bank: its ``name``, its Markdown ``content`` and, as listed from S3, its
    ``updated_at`` (ms)."""

    name: str
    content: str
    updated_at: NotRequired[int]


@dataclass
class Section:
    """The rendered system-prompt section: ``text``, ``rules`` (how many rules are included whole
    or cut; omitted ones do not count), ``truncated`` (any rule cut or omitted), and the budget:
    ``used`` bytes of rendered rule content out of ``limit`` (``max_rule_chars``)."""

    text: str
    rules: int
    truncated: bool
    used: int = 0
    limit: int = 0


@dataclass
class Picked:
    """One memory chosen for injection, its recall score and ``match`` (``search.match``; 0.0
    for the ambient floor) and whether the ambient floor added it (``ambient``)."""

    memory: Memory
    score: float
    match: float = 0.0
    ambient: bool = False


@dataclass
class Injection:
    """Everything one turn injects: the section, the picked memories and the message text
    (``None`` when no memory fits), and the memories' budget: ``memory_limit`` bytes of memory
    text (``recall_budget_tokens * 4``)."""

    section: Section
    memories: list[Picked] = field(default_factory=list)
    message: str | None = None
    memory_limit: int = 0

    @property
    def memory_bytes(self) -> int:
        """UTF-8 bytes of the picked memories' text (what the budget counts)."""
        return sum(len(p.memory.text.encode("utf-8")) for p in self.memories)


def cut_utf8(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding is at most ``max_bytes`` bytes (never
    splits a character)."""
    return text.encode("utf-8")[:max(0, max_bytes)].decode("utf-8", errors="ignore")


_FENCE = patterns.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = patterns.compile(rf"^( {{0,3}})(#{{1,6}})(?:[{patterns.SPACE}]|$)")  # group 2 ends the marker
_SETEXT = patterns.compile(rf"^ {{0,3}}(=+|-+)[{patterns.SPACE}]*$")


def rule_body(content: str) -> str:
    """A rule's markdown rendered as data inside its ``## name`` section (see the module doc):
    tags escaped, headings demoted, setext underlines escaped and fences balanced. Text inside a
    fenced code block keeps its headings; its ``& < >`` are escaped too."""
    out: list[str] = []
    fence: str | None = None
    text = _LINE_BREAKS.sub("\n", content)  # \r, \u2028 and the like break lines too: one kind
    for line in text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").split("\n"):
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line[m.end():].strip():
                fence = None
            out.append(line)
            continue
        if m:
            fence = m.group(1)
            out.append(line)
            continue
        heading = _ATX.match(line)
        if heading:
            line = (heading.group(1) or "") + "#" * min(len(heading.group(2) or "") + 2, 6) + line[heading.end(2):]
        elif _SETEXT.match(line) and out and out[-1].strip():
            line = "\\" + line.lstrip()
        out.append(line)
    if fence is not None:
        out.append(fence)
    return "\n".join(out)


def _cut_rule(raw: str, max_bytes: int) -> str:
    """``rule_body`` of the longest prefix of ``raw`` whose rendering fits ``max_bytes`` UTF-8
    bytes (the raw text is cut, then rendered, so a cut never leaves a fence open or splits an
    entity)."""
    keep = max_bytes
    while True:
        body = rule_body(cut_utf8(raw, keep))
        over = len(body.encode("utf-8")) - max_bytes
        if over <= 0:
            return body
        keep -= over


def render_section(bank: str, rules: Iterable[Rule], max_rule_chars: int, feed: str | None = None) -> Section:
    """The system-prompt section for ``bank``. ``rules``: ``[{name, content}]`` (sorted here by
    name); ``max_rule_chars``: budget in UTF-8 bytes of trimmed rule content, cumulative;
    ``feed``: the bank's ``feed`` setting (``hooks``, ``tools``, ``both``; ``None``: not stated),
    which picks the paragraph (``FEED_PARAGRAPHS``, else ``PARAGRAPH``)."""
    parts = [HEADER.format(bank=bank), FEED_PARAGRAPHS.get(feed or "", PARAGRAPH)]
    used = 0
    included = 0
    truncated = False
    omitting = False
    for rule in sorted(rules, key=lambda r: r["name"]):
        name = rule["name"]
        raw = str(rule.get("content") or "").strip()
        content = rule_body(raw)
        size = len(content.encode("utf-8"))
        if not omitting and used + size <= max_rule_chars:
            parts.append(RULE.format(name=name, content=content))
            used += size
            included += 1
            continue
        truncated = True
        left = max_rule_chars - used
        if not omitting and left > TRUNCATE_MIN_BYTES:
            cut = _cut_rule(raw, left)
            parts.append(RULE.format(name=name, content=cut + "\n" + TRUNCATED.format(max_rule_chars=max_rule_chars)))
            used = max_rule_chars
            included += 1
            omitting = True  # nothing is left: every later rule is omitted
            continue
        omitting = True
        parts.append(OMITTED.format(name=name))
    return Section(text="".join(parts), rules=included, truncated=truncated, used=used, limit=max_rule_chars)


def escape_text(text: str) -> str:
    """Memory text as it appears in the message: ``& < > "`` as XML character entities and every
    line break as one space."""
    out = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return _LINE_BREAKS.sub(" ", out)


def select_memories(hits: list[Picked], ambient: list[Memory], *, recall_limit: int,
                    recall_budget_tokens: int) -> list[Picked]:
    """Choose what to inject from ranked ``hits`` (best first) and the bank's ``ambient`` top
    memories (pinned, corroboration, recency order): top ``recall_limit``, ambient floor, then the
    inclusive byte budget ``recall_budget_tokens * 4`` over raw text bytes."""
    chosen = list(hits[:max(0, recall_limit)])
    floor = min(AMBIENT_FLOOR, recall_limit)
    if len(chosen) < floor:
        seen = {p.memory.id for p in chosen}
        for mem in ambient:
            if len(chosen) >= floor:
                break
            if mem.id in seen or not mem.live:
                continue
            seen.add(mem.id)
            chosen.append(Picked(memory=mem, score=0.0, ambient=True))
    budget = max(0, recall_budget_tokens) * BYTES_PER_TOKEN
    out: list[Picked] = []
    used = 0
    for p in chosen:
        size = len(p.memory.text.encode("utf-8"))
        if used + size > budget:
            break
        used += size
        out.append(p)
    return out


def render_message(bank: str, memories: list[Memory], ambient: list[Memory] | None = None) -> str | None:
    """The ``<memory bank=...>`` message for the matched ``memories`` then the ``ambient`` ones,
    each group in order under its intro line, or ``None`` when both are empty."""
    ambient = ambient or []
    if not memories and not ambient:
        return None
    lines = [MESSAGE_OPEN.format(bank=escape_text(bank))]
    for intro, group in ((MATCHED_INTRO, memories), (AMBIENT_INTRO, ambient)):
        if group:
            lines.append(intro)
            lines.extend(MESSAGE_LINE.format(text=escape_text(m.text)) for m in group)
    lines.append(MESSAGE_CLOSE)
    return "".join(lines)


def render(bank: str, rules: Iterable[Rule], hits: list[Picked], ambient: list[Memory], *,
           recall_limit: int, recall_budget_tokens: int, max_rule_chars: int,
           with_memories: bool = True, feed: str | None = None) -> Injection:
    """The whole injection for one turn (``with_memories=False``: rules only, as on step > 0;
    ``feed``: as ``render_section``)."""
    section = render_section(bank, rules, max_rule_chars, feed)
    limit = max(0, recall_budget_tokens) * BYTES_PER_TOKEN
    if not with_memories:
        return Injection(section=section, memory_limit=limit)
    picked = select_memories(hits, ambient, recall_limit=recall_limit, recall_budget_tokens=recall_budget_tokens)
    message = render_message(bank, [p.memory for p in picked if not p.ambient],
                             [p.memory for p in picked if p.ambient])
    return Injection(section=section, memories=picked, message=message, memory_limit=limit)
