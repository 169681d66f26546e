"""The extraction set (``bench/extraction``): finished conversation turns and the memories an
extractor should take from them, with the scorer and the runner of ``python -m bench --extraction``.

``tune.json`` and ``eval.json``: ``{split, transcripts: [...]}``; a transcript is ``{id, category,
speaker?, messages, gold}``: ``messages`` in the turn-completed hook's shape (``{role, content}``,
content a string or ``[{type: text, text}]`` parts), ``speaker`` the user's first name when they
give it, ``gold`` the memories worth keeping (empty for small talk and general questions). A gold
memory is ``{fact, values, forbidden?, subject?}``: ``fact`` a reference sentence (never used to
match), ``values`` the facts a memory must hold (each a string, or a list of accepted spellings of
one value), ``forbidden`` superseded values (an old date, an old host) it must not hold, and
``subject`` the first name of the person the fact is about, when known.

Matching (``holds``, ``matches``, ``pair``): a value is found in a memory when it occurs there
case-insensitively (casefold, runs of whitespace as one space) with no letter or digit glued to
either end ("June 3" is not in "June 30", "PR" is not in "prefers"). A memory matches a gold
memory when it holds every value (one spelling of each) and no forbidden one. Each extracted
memory matches at most one gold memory and each gold memory at most one extracted memory, paired
greedily: extracted memories in the order the extractor returned them, each to the first gold
memory (file order) still unpaired that it matches. precision = pairs / extracted memories,
recall = pairs / gold memories, summed over a split's transcripts (micro-averaged).

Nothing is tuned on ``eval``: an extractor is changed by looking at ``tune`` only; ``eval`` is read
for the version chosen and reported beside it (bench/extraction/README.md).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

DIR = Path(__file__).resolve().parent / "extraction"
SPLITS = ("tune", "eval")
CATEGORIES = ("mixed", "identity", "preference", "decision", "date", "technical", "person", "tool", "place", "empty")
ORG = "bench-extraction"


@dataclass(frozen=True)
class Gold:
    """One memory worth keeping: ``values`` (each a tuple of accepted spellings), ``forbidden``
    values, ``subject`` (a first name, or None) and the reference sentence ``fact``."""

    fact: str
    values: tuple[tuple[str, ...], ...]
    forbidden: tuple[str, ...] = ()
    subject: str | None = None


@dataclass(frozen=True)
class Transcript:
    """One finished turn: ``messages`` as the hook receives them, its ``gold`` memories."""

    id: str
    category: str
    split: str
    messages: tuple[dict[str, Any], ...]
    gold: tuple[Gold, ...]
    speaker: str | None = None


def _gold(d: dict[str, Any]) -> Gold:
    values = tuple((v,) if isinstance(v, str) else tuple(v) for v in d["values"])
    return Gold(d["fact"], values, tuple(d.get("forbidden", ())), d.get("subject"))


@lru_cache(maxsize=2)
def transcripts(split: str) -> tuple[Transcript, ...]:
    """The transcripts of one split (``tune`` or ``eval``), in file order. Raises ``ValueError``
    for another name."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    blob = json.loads((DIR / f"{split}.json").read_text(encoding="utf-8"))
    if blob.get("split") != split:
        raise ValueError(f"{split}.json names split {blob.get('split')!r}")
    return tuple(Transcript(d["id"], d["category"], split, tuple(d["messages"]), tuple(_gold(g) for g in d["gold"]),
                            d.get("speaker")) for d in blob["transcripts"])


def all_transcripts() -> tuple[Transcript, ...]:
    """Both splits, ``tune`` first."""
    return tuple(t for s in SPLITS for t in transcripts(s))


# --- matching ------------------------------------------------------------------------------------

def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


def holds(text: str, value: str) -> bool:
    """True when ``value`` occurs in ``text`` case-insensitively (whitespace runs as one space)
    with no letter or digit right before or after it."""
    hay, needle = _fold(text), _fold(value)
    if not needle:
        return False
    start = hay.find(needle)
    while start >= 0:
        end = start + len(needle)
        if (start == 0 or not hay[start - 1].isalnum()) and (end == len(hay) or not hay[end].isalnum()):
            return True
        start = hay.find(needle, start + 1)
    return False


def matches(text: str, gold: Gold) -> bool:
    """True when ``text`` holds one spelling of each of ``gold``'s values and none of its forbidden
    values."""
    return (all(any(holds(text, s) for s in spellings) for spellings in gold.values)
            and not any(holds(text, f) for f in gold.forbidden))


def pair(extracted: Sequence[str], gold: Sequence[Gold]) -> list[tuple[int, int]]:
    """Greedy one-to-one pairs ``(extracted index, gold index)``: each extracted memory in order
    takes the first unpaired gold memory it matches."""
    taken: set[int] = set()
    out = []
    for i, text in enumerate(extracted):
        for j, g in enumerate(gold):
            if j not in taken and matches(text, g):
                taken.add(j)
                out.append((i, j))
                break
    return out


@dataclass
class Score:
    """Counts over one or more transcripts: ``extracted`` memories, ``gold`` memories, ``matched``
    pairs, and of the paired gold memories with a ``subject``, how many memories ``named`` it."""

    extracted: int = 0
    gold: int = 0
    matched: int = 0
    with_subject: int = 0
    named: int = 0

    @property
    def precision(self) -> float | None:
        """matched / extracted; None when nothing was extracted."""
        return self.matched / self.extracted if self.extracted else None

    @property
    def recall(self) -> float | None:
        """matched / gold; None when there is no gold memory."""
        return self.matched / self.gold if self.gold else None

    def add(self, other: Score) -> None:
        self.extracted += other.extracted
        self.gold += other.gold
        self.matched += other.matched
        self.with_subject += other.with_subject
        self.named += other.named

    def as_dict(self) -> dict[str, Any]:
        return {"extracted": self.extracted, "gold": self.gold, "matched": self.matched,
                "precision": self.precision, "recall": self.recall,
                "subject_matched": self.with_subject, "subject_named": self.named}


def score(extracted: Sequence[str], gold: Sequence[Gold]) -> Score:
    """The ``Score`` of one transcript's ``extracted`` memory texts against its ``gold``."""
    pairs = pair(extracted, gold)
    subj = [(i, j) for i, j in pairs if gold[j].subject]
    named = sum(1 for i, j in subj if holds(extracted[i], gold[j].subject or ""))
    return Score(len(extracted), len(gold), len(pairs), len(subj), named)


def total(scores: Iterable[Score]) -> Score:
    """The sum of ``scores`` (micro-average)."""
    out = Score()
    for s in scores:
        out.add(s)
    return out


# --- the runner ----------------------------------------------------------------------------------

@dataclass
class Run:
    """One transcript through the extraction job: the memory texts it stored, in order, and its
    ``Score``."""

    transcript: Transcript
    extracted: list[str] = field(default_factory=list)
    score: Score = field(default_factory=Score)


def extract(t: Transcript, extractor: Any = None) -> list[str]:
    """The texts of the memories the extraction job stores for ``t`` (inside a backend:
    ``bench.harness.backend``): the hook's job (``make_job``, today's tuning) run by ``run_job``
    in a bank of its own, each stored memory once, in the order the job saved them."""
    from chalicelib.banks.service import get_memory
    from chalicelib.extraction.job import make_job, run_job, tuning

    bank = f"x-{t.id}"
    job = make_job(ORG, bank, t.id, "turn-1", list(t.messages), actor="bench",
                   window_size=tuning().extraction_window)
    outcome = run_job(job, extractor)
    return [get_memory(ORG, bank, mid).text for mid in dict.fromkeys(outcome.memory_ids)]


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _row(name: str, n: int, s: Score) -> str:
    named = f"{s.named}/{s.with_subject}" if s.with_subject else "-"
    return (f"| {name} | {n} | {s.gold} | {s.extracted} | {s.matched} | {_pct(s.precision)} | {_pct(s.recall)} "
            f"| {named} |")


HEAD = ["| | transcripts | gold | extracted | matched | precision | recall | subject named |",
        "|---|---:|---:|---:|---:|---:|---:|---:|"]


def _split_md(split: str, runs: list[Run]) -> list[str]:
    lines = [f"### {split}", "", *HEAD, _row("all", len(runs), total(r.score for r in runs))]
    for cat in CATEGORIES:
        these = [r for r in runs if r.transcript.category == cat]
        if these:
            lines.append(_row(cat, len(these), total(r.score for r in these)))
    empty = [r for r in runs if not r.transcript.gold]
    wrong = sum(1 for r in empty if r.extracted)
    return [*lines, "", f"Transcripts with empty gold given at least one memory: {wrong} of {len(empty)}.", ""]


def _detail(r: Run) -> dict[str, Any]:
    pairs = dict(pair(r.extracted, r.transcript.gold))
    paired = set(pairs.values())
    return {"id": r.transcript.id, "extracted": r.extracted,
            "unmatched_extracted": [x for i, x in enumerate(r.extracted) if i not in pairs],
            "missed_gold": [g.fact for j, g in enumerate(r.transcript.gold) if j not in paired]}


def run(extractor: Any = None) -> tuple[dict[str, Any], list[str]]:
    """``(json, markdown lines)``: every transcript of both splits through the extraction job
    (``extract``) under in-process moto, with ``extractor`` (default: the one the settings pick,
    offline outside Lambda). Precision and recall per split and per category; the per-transcript
    detail (extracted texts, unmatched ones, missed gold) for ``tune`` only, so nothing is tuned
    on ``eval``."""
    from chalicelib.extraction.models import get_extractor

    from .harness import backend

    started = time.perf_counter()
    runs: dict[str, list[Run]] = {}
    with backend():
        extractor = extractor or get_extractor()
        for split in SPLITS:
            runs[split] = []
            for t in transcripts(split):
                texts = extract(t, extractor)
                runs[split].append(Run(t, texts, score(texts, t.gold)))
    data: dict[str, Any] = {"extractor": extractor.name, "seconds": round(time.perf_counter() - started, 1),
                            "matching": "all values (one spelling each), no forbidden value; greedy one-to-one"}
    md = ["## Extraction set", "", f"Extractor: `{extractor.name}`. {len(all_transcripts())} transcripts "
          f"(bench/extraction); a memory matches a gold one when it holds all its values and no forbidden one "
          f"(bench/extraction/README.md). Subject named: paired gold memories about a named person whose memory "
          f"names them.", ""]
    for split, rs in runs.items():
        data[split] = {"transcripts": len(rs), "all": total(r.score for r in rs).as_dict(),
                       "categories": {c: total(r.score for r in rs if r.transcript.category == c).as_dict()
                                      for c in CATEGORIES},
                       "empty_gold_with_memories": sum(1 for r in rs if not r.transcript.gold and r.extracted)}
        md += _split_md(split, rs)
    data["tune"]["detail"] = [_detail(r) for r in runs["tune"]]
    return data, md
