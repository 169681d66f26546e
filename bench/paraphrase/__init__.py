"""The paraphrase set: questions that share no analysed word with the memory that answers them.

``memories.jsonl``: one memory a line, ``{id, text, entities, topic}``: one self-contained sentence
of an agent's bank (the user's preferences and life, a small company's projects, people, tools,
places, dates and decisions), with the entity handles an agent would give it (the people,
projects and tools the sentence names, ``user`` for the user's own facts). Many memories share a
subject with a gold one and answer something else (distractors).

``questions.jsonl``: one question a line, ``{id, question, gold, category, split}``, worded the
way a user asks an agent; ``gold`` lists the ids of the memories that answer it; ``category`` is
one of ``CATEGORIES``; ``split`` is ``tune`` or ``eval`` (``SPLITS``). Nothing is tuned on the
``eval`` part: it is read once, for the option chosen on ``tune`` (bench/paraphrase/README.md).

The rule every question keeps (``shared_tokens``, checked by tests/unit/test_paraphrase_set.py):
recall's own analysers (``search.analyzers``: the ``text`` field's stemming, stopwords and
identifier splitting, and the ``cjk`` field's bigrams) yield no token common to the question and
any of its gold memories, so their BM25F is 0; and the question names none of a gold memory's
entity handles except ``user``, which any first-person question names.

Times: memory ``i`` (file order) is saved at ``NOW - (i % 90) days - i minutes`` (``saved_at``),
and recall runs as of ``NOW``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

DIR = Path(__file__).resolve().parent
CATEGORIES = ("preference", "decision", "date", "person", "tool", "place", "project")
SPLITS = ("tune", "eval")
NOW = int(datetime(2026, 12, 15, 12, 0, tzinfo=UTC).timestamp() * 1000)
DAY_MS, MINUTE_MS = 86_400_000, 60_000
USER_HANDLE = "user"


@dataclass(frozen=True)
class Memory:
    id: str
    text: str
    entities: tuple[str, ...]
    topic: str


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    gold: tuple[str, ...]
    category: str
    split: str


@lru_cache(maxsize=1)
def memories() -> tuple[Memory, ...]:
    """Every memory of the set, in file order."""
    out = []
    for line in (DIR / "memories.jsonl").read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        out.append(Memory(d["id"], d["text"], tuple(d["entities"]), d["topic"]))
    return tuple(out)


@lru_cache(maxsize=1)
def all_questions() -> tuple[Question, ...]:
    """Every question of the set, in file order (both splits)."""
    out = []
    for line in (DIR / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        out.append(Question(d["id"], d["question"], tuple(d["gold"]), d["category"], d["split"]))
    return tuple(out)


def questions(split: str) -> list[Question]:
    """The questions of one split (``tune`` or ``eval``). Raises ``ValueError`` for another name."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return [q for q in all_questions() if q.split == split]


def saved_at(i: int) -> int:
    """ms since epoch at which memory ``i`` (file order) is saved: within the 90 days before ``NOW``."""
    return NOW - (i % 90) * DAY_MS - i * MINUTE_MS


def query_tokens(text: str) -> set[str]:
    """The tokens recall looks up for the query ``text`` (``search.recall.analyse``): its
    ``text``/``name``/``description`` terms and its ``cjk`` bigrams, analysed as a query."""
    from chalicelib.search.analyzers import cjk_analyzer, memory_analyzer, query_terms

    return set(query_terms(memory_analyzer(), text)) | set(query_terms(cjk_analyzer(), text))


def document_tokens(text: str) -> set[str]:
    """The tokens recall indexes for a memory's ``text`` (its ``text`` and ``cjk`` fields)."""
    from chalicelib.search.analyzers import cjk_analyzer, memory_analyzer

    return {t.text for t in memory_analyzer()(text)} | {t.text for t in cjk_analyzer()(text)}


def shared_tokens(question: str, memory: Memory) -> set[str]:
    """What would let BM25F or the entity signal match ``memory`` to ``question`` (the set's rule:
    nothing): the query tokens found among the memory's indexed tokens, plus the memory's entity
    handles the question names other than ``user``."""
    from chalicelib.search.analyzers import entity_keys

    named = set(entity_keys(question)) & set(memory.entities) - {USER_HANDLE}
    return (query_tokens(question) & document_tokens(memory.text)) | named


def import_lines_of(mems: tuple[Memory, ...] | None = None) -> list[bytes]:
    """The set as bank import lines (``banks.transfer.import_lines``): text, entities and times."""
    mems = memories() if mems is None else mems
    return [json.dumps({"text": m.text, "entities": list(m.entities), "created_at": saved_at(i),
                        "updated_at": saved_at(i)}).encode() for i, m in enumerate(mems)]


def import_bank(org: str, bank: str) -> dict[str, str]:
    """Import the set into ``bank`` (inside a backend: bench.harness.backend); returns
    ``{memory id in the bank (content fingerprint): set id}``. Raises ``RuntimeError`` when the
    import reports an error."""
    from chalicelib.banks.transfer import import_lines
    from chalicelib.fingerprint import fingerprint

    result = import_lines(org, bank, import_lines_of(), actor="bench")
    if result.errors:
        raise RuntimeError(f"paraphrase set: import errors {result.errors[:3]}")
    return {fingerprint(m.text): m.id for m in memories()}
