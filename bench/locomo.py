"""LoCoMo retrieval quality: Cairn's recall beside plain and stemmed BM25.

One memory per turn, ``"<speaker>: <text>"`` (+ `` [shared image: <blip_caption>]``), imported
through ``chalicelib.banks.transfer.import_lines`` into one bank per conversation with the
session date as ``created_at``/``updated_at`` and the speaker as entity. Turns whose text has the
same content fingerprint collapse into one memory (Cairn dedupes by fingerprint); that memory
answers for every turn it stands for, in every system alike. Each question is a query; metrics
are evidence R@5, R@10, All@10 and MRR (reciprocal rank of the first evidence turn within the
top ``DEPTH``), per category and over categories 1-4.

Time: each conversation keeps its own dates. A turn is saved at its session's date plus one
minute per turn before it (``TURN_MS``, a plausible chat pace; LoCoMo gives one time per
session), with ``source.session_id`` naming its session (``<sample>/s<n>``), and recall runs with
``now`` at the conversation's last turn (``Conversation.now``): as an agent would ask right after
the last session, so "last week" and "in May 2023" mean what they meant to the speakers.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

TUNE = ("conv-26", "conv-30", "conv-41")
DEPTH = 50
TURN_MS = 60_000  # one minute between the turns of a session
CATEGORIES = (1, 2, 3, 4, 5)
_EVIDENCE = re.compile(r"^D(\d+):(\d+)$")


def data_dir() -> Path:
    """``$CAIRN_LOCOMO_DIR``, default ``../shared/data/locomo`` relative to the repository."""
    env = os.environ.get("CAIRN_LOCOMO_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo"


@dataclass
class Question:
    text: str
    category: int
    evidence: set[int]  # doc indexes


@dataclass
class Conversation:
    sample_id: str
    docs: list[str] = field(default_factory=list)  # memory text per doc index
    speakers: list[str] = field(default_factory=list)
    times: list[int] = field(default_factory=list)  # ms, the session's date + TURN_MS per turn
    sessions: list[str] = field(default_factory=list)  # source.session_id per doc index
    now: int = 0  # ms: the last turn's time, recall's clock
    questions: list[Question] = field(default_factory=list)
    dropped_evidence: int = 0
    skipped_questions: int = 0


def parse_date(raw: str) -> int:
    """``1:56 pm on 8 May, 2023`` -> ms since epoch (UTC)."""
    dt = datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


def repair_evidence(raw: str) -> list[str]:
    """Split and repair one evidence string (``D8:6; D9:17``, ``D:11:26``, ``D30:05``)."""
    out = []
    for part in re.split(r"[;,\s]+", raw.strip()):
        part = part.replace("D:", "D", 1) if part.startswith("D:") else part
        m = _EVIDENCE.match(part)
        if m:
            out.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return out


def load(path: Path | None = None) -> list[Conversation]:
    """Parse the LoCoMo json into conversations (docs deduplicated by Cairn's fingerprint), with
    their own dates (module docstring)."""
    from chalicelib.fingerprint import fingerprint

    path = path or data_dir() / "locomo-dev7.json"
    samples = json.loads(Path(path).read_text())
    out = []
    for s in samples:
        conv = Conversation(sample_id=s["sample_id"])
        c = s["conversation"]
        sessions = sorted(int(k.split("_")[1]) for k in c if re.fullmatch(r"session_\d+", k))
        dates = {n: parse_date(c[f"session_{n}_date_time"]) for n in sessions}
        by_fp: dict[str, int] = {}
        turn_doc: dict[str, int] = {}
        for n in sessions:
            for i, turn in enumerate(c[f"session_{n}"]):
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shared image: {turn['blip_caption']}]"
                fp = fingerprint(text)
                if fp not in by_fp:
                    by_fp[fp] = len(conv.docs)
                    conv.docs.append(text)
                    conv.speakers.append(turn["speaker"])
                    conv.times.append(dates[n] + i * TURN_MS)
                    conv.sessions.append(f"{conv.sample_id}/s{n}")
                    conv.now = max(conv.now, conv.times[-1])
                d = turn["dia_id"]
                m = _EVIDENCE.match(d)
                turn_doc[f"D{int(m.group(1))}:{int(m.group(2))}" if m else d] = by_fp[fp]
        for q in s["qa"]:
            ev: set[int] = set()
            for raw in q.get("evidence", []):
                ids = repair_evidence(raw)
                if not ids:
                    conv.dropped_evidence += 1
                for e in ids:
                    if e in turn_doc:
                        ev.add(turn_doc[e])
                    else:
                        conv.dropped_evidence += 1
            if not ev:
                conv.skipped_questions += 1
                continue
            conv.questions.append(Question(text=q["question"], category=int(q["category"]), evidence=ev))
        out.append(conv)
    return out


# --- metrics ---------------------------------------------------------------------------------

def score_ranking(ranked: list[int], evidence: set[int]) -> dict[str, float]:
    """R@5, R@10, All@10 and MRR (first evidence doc within the top DEPTH) of one ranking."""
    top5, top10 = set(ranked[:5]), set(ranked[:10])
    rr = 0.0
    for i, d in enumerate(ranked[:DEPTH]):
        if d in evidence:
            rr = 1.0 / (i + 1)
            break
    return {"R@5": len(evidence & top5) / len(evidence), "R@10": len(evidence & top10) / len(evidence),
            "All@10": float(evidence <= top10), "MRR": rr}


def aggregate(rows: list[tuple[int, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Mean metrics per category (``"1"``..``"5"``), over ``"1-4"``, with question counts ``n``."""
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for cat, m in rows:
        groups[str(cat)].append(m)
        if cat in (1, 2, 3, 4):
            groups["1-4"].append(m)
    out = {}
    for g, ms in groups.items():
        out[g] = {k: round(sum(m[k] for m in ms) / len(ms), 4) for k in ("R@5", "R@10", "All@10", "MRR")}
        out[g]["n"] = len(ms)
    return out


# --- systems ---------------------------------------------------------------------------------

Ranker = Callable[[str], list[int]]


def plain_bm25(conv: Conversation) -> Ranker:
    """rank-bm25 Okapi over lowercase word tokens (the reference baseline of docs/benchmark.md)."""
    from rank_bm25 import BM25Okapi

    def tok(t: str) -> list[str]:
        return re.findall(r"\w+", t.lower())

    bm = BM25Okapi([tok(d) for d in conv.docs])

    def rank(q: str) -> list[int]:
        scores = bm.get_scores(tok(q))
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        return [i for i in order[:DEPTH] if scores[i] > 0]
    return rank


def stemmed_bm25(conv: Conversation) -> Ranker:
    """bm25s with English stopwords and the Snowball (PyStemmer) stemmer."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(conv.docs, stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)
    k = min(DEPTH, len(conv.docs))

    def rank(q: str) -> list[int]:
        qt = bm25s.tokenize([q], stopwords="en", stemmer=stemmer, show_progress=False)
        if not qt.vocab:
            return []
        docs, scores = retriever.retrieve(qt, k=k, show_progress=False)
        return [int(d) for d, s in zip(docs[0], scores[0], strict=False) if s > 0]
    return rank


def import_conversation(org: str, bank: str, conv: Conversation) -> dict[str, int]:
    """Import one conversation into ``bank`` through ``import_lines``; returns {doc index -> ...}
    as a map from memory id to doc index (``ids``) plus the import result counts."""
    from chalicelib.banks.transfer import import_lines
    from chalicelib.fingerprint import fingerprint

    lines = [json.dumps({"text": t, "entities": [s], "created_at": ts, "updated_at": ts,
                         "source": {"session_id": sid}}).encode()
             for t, s, ts, sid in zip(conv.docs, conv.speakers, conv.times, conv.sessions, strict=True)]
    result = import_lines(org, bank, lines, actor="bench")
    if result.errors:
        raise RuntimeError(f"{conv.sample_id}: import errors {result.errors[:3]}")
    return {fingerprint(t): i for i, t in enumerate(conv.docs)}


def cairn_ranker(org: str, bank: str, ids: dict[str, int], now: int, tuning) -> Ranker:
    """Cairn's ranking of ``bank`` (the top ``DEPTH``) with ``tuning``, as of ``now``, as doc
    indexes (``ids``: memory id -> doc index, from ``import_conversation``): recall's own ranking
    over the bank's cached index with the query's sentence vector as recall computes it, without
    the per-call consistent read (checked against a full ``recall`` on the first question asked).
    Runs inside the benchmark's backend."""
    from chalicelib.search import index as index_mod
    from chalicelib.search.recall import _rank, query_vector, read_rows, recall

    cache = index_mod.active_cache()
    entry = cache.fresh(org, bank, read_rows(org, [bank])[bank])
    leaves = [(leaf, entry.stats_cache, bank) for leaf, _off in entry.reader().leaf_readers()]
    checked = False

    def rank(q: str) -> list[int]:
        nonlocal checked
        hits, _n = _rank(leaves, q, limit=DEPTH, tag=None, include_superseded=False, tuning=tuning, filter=None,
                         now=now, query_vector=query_vector(q, tuning)[0])
        if not checked:
            full = recall(org, [bank], q, limit=DEPTH, now=now, tuning=tuning).hits
            assert [h.memory.id for h in full] == [h.memory.id for h in hits], "ranking != recall"
            checked = True
        return [ids[h.memory.id] for h in hits if h.memory.id in ids]
    return rank


def evaluate(convs: list[Conversation], rankers: dict[str, dict[str, Ranker]]) -> dict:
    """``{system: {"all7": agg, "tune3": agg, "heldout4": agg, "per_conv": {...}}}``."""
    out: dict = {}
    for system, per_conv in rankers.items():
        rows: dict[str, list] = {"all7": [], "tune3": [], "heldout4": []}
        for conv in convs:
            rank = per_conv[conv.sample_id]
            for q in conv.questions:
                m = score_ranking(rank(q.text), q.evidence)
                rows["all7"].append((q.category, m))
                rows["tune3" if conv.sample_id in TUNE else "heldout4"].append((q.category, m))
        out[system] = {k: aggregate(v) for k, v in rows.items()}
    return out
