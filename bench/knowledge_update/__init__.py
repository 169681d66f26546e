"""The knowledge-update set: a bank of one-sentence team memories in which some facts are later
corrected, some repeated in other words, and some echoed by look-alikes about another subject;
the labelled pairs, the questions, and the scorer the detection code is judged with
(bench/knowledge_update/README.md). Standard library only.

``bank.json``: ``{id, text, subject, kind, entities, split, order}`` per memory, saved in
``order`` (1..N; ``saved_at``). ``pairs.json``: ``{id, label, first, second, attribute, field,
old, new, subjects, split}``, ``first`` saved before ``second``. ``questions.json``: ``{id, kind,
question, gold, stale, subject, split}``. ``wild.json``: hand-written pairs in free wording,
``{id, label, first, second, field, old, new}`` with the two texts inline (no bank, no split).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

DIR = Path(__file__).resolve().parent
LABELS = ("conflict", "duplicate", "unrelated")
LINKS = ("conflict", "duplicate")  # the labels a detector predicts; ``unrelated`` is no link
FIELDS = ("date", "number", "name", "negation", "other")
QUESTION_KINDS = ("current", "lookalike", "no_answer")
SPLITS = ("tune", "eval")
START = int(datetime(2026, 3, 1, 9, 0, tzinfo=UTC).timestamp() * 1000)
HOUR_MS = 3_600_000


@dataclass(frozen=True)
class Memory:
    id: str
    text: str
    subject: str
    kind: str  # project | service | person | team
    entities: tuple[str, ...]
    split: str
    order: int  # 1..N, the save order


@dataclass(frozen=True)
class Pair:
    """Two memories, ``first`` saved before ``second`` (ids in the bank; texts for a wild pair)."""

    id: str
    label: str  # conflict | duplicate | unrelated
    first: str
    second: str
    field: str | None  # conflict only: date | number | name | negation | other
    old: str | None  # conflict only: the value as ``first`` states it
    new: str | None  # conflict only: the value as ``second`` states it
    attribute: str | None = None
    subjects: tuple[str, ...] = ()
    split: str | None = None


@dataclass(frozen=True)
class Question:
    id: str
    kind: str  # current | lookalike | no_answer
    question: str
    gold: tuple[str, ...]  # the memories that answer it now (empty: no answer in the bank)
    stale: tuple[str, ...]  # the corrected memories it must not be answered by
    subject: str
    split: str


@dataclass(frozen=True)
class Prediction:
    """A link a detector made when ``second`` was saved: ``label`` is ``conflict`` or ``duplicate``."""

    first: str
    second: str
    label: str


@dataclass(frozen=True)
class LinkScore:
    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0


@dataclass(frozen=True)
class PairScores:
    """Pair-level scores of one split: per link label, and the look-alikes linked (hence retired
    under an automatic supersede setting) out of all look-alike pairs."""

    conflict: LinkScore
    duplicate: LinkScore
    lookalikes_linked: int
    lookalikes: int

    @property
    def lookalikes_retired_share(self) -> float:
        return self.lookalikes_linked / self.lookalikes if self.lookalikes else 0.0


@dataclass(frozen=True)
class QuestionScores:
    current_first: float  # share of ``current`` questions whose first result is a gold memory
    no_answer_empty: float  # share of ``no_answer`` questions with no result at all
    gold_loss: float  # share of answered questions whose gold the baseline returned and these results miss


def _rows(name: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((DIR / name).read_text(encoding="utf-8"))
    return rows


@lru_cache(maxsize=1)
def bank() -> tuple[Memory, ...]:
    """Every memory of the bank, in save order."""
    return tuple(Memory(r["id"], r["text"], r["subject"], r["kind"], tuple(r["entities"]), r["split"], r["order"])
                 for r in _rows("bank.json"))


def _pair(r: dict[str, Any]) -> Pair:
    return Pair(r["id"], r["label"], r["first"], r["second"], r["field"], r["old"], r["new"],
                r.get("attribute"), tuple(r.get("subjects", ())), r.get("split"))


@lru_cache(maxsize=1)
def pairs() -> tuple[Pair, ...]:
    """Every labelled pair of the bank (both splits), in file order."""
    return tuple(_pair(r) for r in _rows("pairs.json"))


@lru_cache(maxsize=1)
def questions() -> tuple[Question, ...]:
    """Every question (both splits), in file order."""
    return tuple(Question(r["id"], r["kind"], r["question"], tuple(r["gold"]), tuple(r["stale"]), r["subject"],
                          r["split"]) for r in _rows("questions.json"))


@lru_cache(maxsize=1)
def wild() -> tuple[Pair, ...]:
    """The hand-written pairs in free wording: ``first`` and ``second`` are texts, not ids."""
    return tuple(_pair(r) for r in _rows("wild.json"))


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


def split_pairs(split: str) -> list[Pair]:
    """The pairs of one split. Raises ``ValueError`` for another name."""
    _check_split(split)
    return [p for p in pairs() if p.split == split]


def split_questions(split: str) -> list[Question]:
    """The questions of one split. Raises ``ValueError`` for another name."""
    _check_split(split)
    return [q for q in questions() if q.split == split]


def saved_at(memory: Memory) -> int:
    """ms since epoch at which ``memory`` is saved: ``START`` + one hour per step of ``order``."""
    return START + memory.order * HOUR_MS


def score_pairs(predicted: Iterable[Prediction], split: str | None = None,
                gold: Sequence[Pair] | None = None) -> PairScores:
    """Pair-level scores of ``predicted`` links on ``split``. A pair is unordered; a prediction
    belongs to the split of its ``second`` (the memory being saved). A predicted link is a true
    positive for its label when the gold pair carries that label; any other link of that label
    (no gold pair, a look-alike, the other label) is a false positive; a gold pair of the label
    not predicted with it is a false negative. ``gold`` replaces the set's pairs (the wild pairs,
    whose ``first`` and ``second`` are texts, or a hand-made list): then ``split`` is not given
    and every prediction counts. Raises ``ValueError`` for an unknown split, label or memory id."""
    in_bank = gold is None
    if in_bank or split is not None:
        _check_split(split or "")
    gold = list(pairs()) if gold is None else list(gold)
    splits = {m.id: m.split for m in bank()} if in_bank else {}
    preds = list(predicted)
    for p in preds:
        if p.label not in LINKS:
            raise ValueError(f"prediction label must be one of {LINKS}, got {p.label!r}")
        if in_bank and not {p.first, p.second} <= splits.keys():
            raise ValueError(f"prediction names a memory not in the bank: {p.first!r}, {p.second!r}")
    mine = [p for p in preds if not in_bank or splits[p.second] == split]
    labelled = {frozenset((g.first, g.second)): g.label for g in gold if not in_bank or g.split == split}
    linked = {(frozenset((p.first, p.second)), p.label) for p in mine}
    scores = {}
    for label in LINKS:
        want = {k for k, v in labelled.items() if v == label}
        got = {k for k, lab in linked if lab == label}
        scores[label] = LinkScore(len(want & got), len(got - want), len(want - got))
    lookalikes = {k for k, v in labelled.items() if v == "unrelated"}
    any_link = {k for k, _lab in linked}
    return PairScores(scores["conflict"], scores["duplicate"], len(lookalikes & any_link), len(lookalikes))


def score_questions(results: Mapping[str, Sequence[str]], split: str,
                    baseline: Mapping[str, Sequence[str]] | None = None) -> QuestionScores:
    """Question-level scores of one split. ``results``: question id -> the memory ids returned, best
    first (a missing question returned nothing). ``baseline``: the same with detection off (the
    threshold off); without it the gold loss is 0. Raises ``ValueError`` for an unknown split."""
    qs = split_questions(split)
    current = [q for q in qs if q.kind == "current"]
    none = [q for q in qs if q.kind == "no_answer"]
    first = sum(1 for q in current if list(results.get(q.id, ()))[:1] and results[q.id][0] in q.gold)
    empty = sum(1 for q in none if not results.get(q.id))
    kept = [q for q in qs if q.gold and baseline is not None and set(q.gold) & set(baseline.get(q.id, ()))]
    lost = sum(1 for q in kept if not set(q.gold) & set(results.get(q.id, ())))
    return QuestionScores(first / len(current) if current else 0.0, empty / len(none) if none else 0.0,
                          lost / len(kept) if kept else 0.0)
