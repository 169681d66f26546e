"""The live memories of a bank nearest to a text being written (write-time related memories,
``banks.related``), from the bank's recall index: no second index.

Candidates: the top ``FETCH`` BM25F hits of the text's terms, the ``FETCH`` newest memories
carrying one of the given entity handles, and the ``FETCH`` memories whose stored sentence vector
is nearest to the text's (cosine), all live; each with its cosine to the text (0 without a
vector). On a write's path the index is used only when this container holds it (or the bank is
small enough to read whole): no snapshot load, no rebuild (``index.IndexCache.loaded``), so a
bank cold here answers ``None``; ``load=True`` (a deferred check, off the write's path) loads it
as a recall does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.records import Memory
from ..core.store import BankHead
from . import index as index_mod
from .recall import TEXT_FIELDS, analyse, bm25f, entity_hits, pick, stored_record
from .scorer import CorpusStats

FETCH = 10  # candidates per source
REBUILD_MAX = 200  # records of a bank small enough to read whole when its index is cold here


@dataclass(frozen=True)
class Neighbour:
    """A live memory near the text: its record and the cosine of the two sentence vectors."""

    memory: Memory
    similarity: float


def neighbours(org_id: str, bank: str, head: BankHead, text: str, vector: np.ndarray | None,
               handles: list[str], *, exclude: str | None = None, load: bool = False) -> list[Neighbour] | None:
    """The live memories of ``bank`` (as ``head``, its consistent read, shows it) near ``text``
    (module docstring), its own memory ``exclude`` left out, nearest first; ``None`` when the
    bank's index is cold in this container and ``load`` is False."""
    cache = index_mod.active_cache()
    with cache.lock(org_id, bank):
        entry = cache.fresh(org_id, bank, head) if load else cache.loaded(org_id, bank, head, rebuild_max=REBUILD_MAX)
        if entry is None:
            return None
        readers = [leaf for leaf, _off in entry.reader().leaf_readers() if leaf.doc_count_all() > 0]
        return _near(readers, entry.stats_cache, text, vector, handles, exclude)


def _near(readers: list[Any], cache: dict, text: str, vector: np.ndarray | None, handles: list[str],
          exclude: str | None) -> list[Neighbour]:
    if not readers:
        return []
    stats = CorpusStats([(r, cache) for r in readers], False)
    data = [stats.data(i) for i in range(len(readers))]
    allowed = [stats.segments[i].keep for i in range(len(readers))]  # live documents only
    if exclude is not None:
        allowed = [a & np.array([x != exclude for x in sd.ids], dtype=bool) if exclude in sd.ids else a
                   for a, sd in zip(allowed, data, strict=True)]
    q = analyse(text)
    bm = bm25f(stats, readers, [(f, t) for t in q.terms for f in TEXT_FIELDS], allowed)
    ent = entity_hits(stats, readers, tuple(dict.fromkeys([*handles, *q.entity_keys])), allowed)
    keys = dict.fromkeys(pick(data, [d for d, _v in bm], [v for _d, v in bm], FETCH, None))
    keys.update(dict.fromkeys(pick(data, [d for d, _v in ent], None, FETCH, None)))
    sims: dict[tuple[int, int], float] = {}
    if vector is not None:
        for i, sd in enumerate(data):
            mat, present = sd.vectors(readers[i])
            if not mat.shape[1]:
                continue
            cos = mat @ vector
            ok = np.flatnonzero(present & allowed[i])
            for d in ok[np.argsort(-cos[ok], kind="stable")[:FETCH]].tolist():
                keys[(i, d)] = None
            sims.update({k: float(cos[k[1]]) for k in keys if k[0] == i})
    out = []
    for i, d in keys:
        rec = stored_record(readers[i], d, data[i])
        if rec is not None and rec.live:
            out.append(Neighbour(rec, sims.get((i, d), 0.0)))
    out.sort(key=lambda n: (-n.similarity, n.memory.id))
    return out
