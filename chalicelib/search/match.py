"""How well a recalled memory matches the query: a number in [0, 1] and its level, so a caller
(and recall itself, under a bank's threshold) can tell an answer from the nearest unrelated
memory. No model call beyond the query vector recall already has.

A hit's ``match`` is the greater of two parts:

- **lexical**: the share of the query's distinctive words the memory holds: the idf (``text``
  field) of each analysed query term found in the memory's ``text``, ``name`` or
  ``description`` (or in a handle the query names that the memory carries), over the idf of all
  of them. A term the bank has never seen weighs the most,
  so a question about a subject the bank does not know ("who leads Skylark?") matches its
  look-alikes ("Bittern is led by Ana") only in part. A CJK query counts its bigrams the same way
  in the ``cjk`` field (the greater of the two). A query without terms (only the handles it
  names, e.g. ``user``) matches a memory carrying one of those handles fully.
- **semantic**: the cosine of the memory's sentence vector with the query's, mapped linearly from
  ``SEM_ZERO`` (0) to ``SEM_ONE`` (1) and clipped; 0 without either vector (``w_semantic`` 0, a
  query the model does not cover).

A query's date expressions (``core.dates.expressions``: ``Q3``, ``July 20``, ``2026-07-20``) are
matched by recall's time signal against the dates a memory states: their words are neither
names nor terms of the lexical part (unless the query has no other term).

A query that names something no memory mentions (a word written as a name, ``names``, with a
term no memory holds) is about a subject the bank does not know: every hit's match is its
lexical part, at most ``UNKNOWN_CAP`` (weak). Its look-alikes are close in meaning and share its
other words ("who leads Skylark?" and "Bittern is led by Ana") and answer nothing.

Levels (``level``): ``strong`` (>= ``STRONG``), ``partial`` (>= ``PARTIAL``, the default
threshold), ``weak`` (below; recall returns such hits only when a bank's threshold is lower),
``none`` (no hit). ``bench/match.py`` chose the constants and the default threshold on the
knowledge-update set's tuning part.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..core import dates
from .analyzers import memory_analyzer, query_terms

Key = tuple[int, int]  # (leaf, document number)
Level = Literal["strong", "partial", "weak", "none"]
TEXT_FIELDS = ("text", "name", "description")
SEM_ZERO = 0.1  # a cosine at or below this is no semantic match
SEM_ONE = 0.4  # a cosine at or above this is a full one (a reworded question of the memory)
STRONG = 0.8
PARTIAL = 0.35
UNKNOWN_CAP = 0.3  # the most a hit matches a query naming something the bank never mentions


def level(match: float | None) -> Level:
    """The level of a best hit's ``match`` (``None``: no hit)."""
    if match is None:
        return "none"
    if match >= STRONG:
        return "strong"
    return "partial" if match >= PARTIAL else "weak"


def semantic_part(cos: float, zero: float = SEM_ZERO, one: float = SEM_ONE) -> float:
    """A cosine mapped to [0, 1] from ``zero`` to ``one`` (module docstring)."""
    return float(min(1.0, max(0.0, (cos - zero) / (one - zero))))


def combine(lexical: float, cos: float | None, unknown_name: bool, zero: float = SEM_ZERO,
            one: float = SEM_ONE) -> float:
    """A hit's ``match`` from its lexical part, its cosine (``None``: none) and whether the query
    names something the corpus never mentions (module docstring); ``zero`` and ``one`` map the
    cosine."""
    if unknown_name:
        return min(lexical, UNKNOWN_CAP)
    return max(lexical, 0.0 if cos is None else semantic_part(cos, zero, one))


_EDGE = "\"'()[]{}<>.,;:!?`*"


def names(query: str) -> list[str]:
    """The words of ``query`` written as names: capitalised past its first word ("Skylark",
    "Maya", "SMS"), an identifier joined by an underscore ("fraud_scoring") or one mixing
    letters and digits ("fp3910022638d5023e", "eu-west-1", "v2"); a possessive ``'s`` dropped.
    A hyphen alone does not make a name ("cross-platform", "to-do")."""
    out = []
    for expression in dates.expressions(query):
        query = query.replace(expression, " ")
    for i, raw in enumerate(query.split()):
        w = raw.strip(_EDGE)
        for tail in ("'s", "\u2019s"):
            w = w.removesuffix(tail)
        if not w or not any(c.isalpha() for c in w):
            continue
        if (i > 0 and w[0].isupper()) or "_" in w.strip("_") or any(c.isdigit() for c in w):
            out.append(w)
    return out


@dataclass
class Matcher:
    """The ``match`` of candidates of one recall: ``stats`` (``scorer.CorpusStats``), ``readers``
    and ``data`` (per-leaf ``SegmentData``), the query's analysed ``terms``, ``cjk`` bigrams and
    ``entity_keys``, its unit ``vector`` (``None``: no semantic part) and its raw text ``query``
    (``None``: only analysed terms are known, no name is looked for). Call it with a key."""

    stats: Any
    readers: list[Any]
    data: list[Any]
    terms: tuple[str, ...]
    cjk: tuple[str, ...]
    entity_keys: tuple[str, ...]
    vector: np.ndarray | None
    query: str | None = None
    _idf: dict[tuple[str, str], float] = field(default_factory=dict)
    _unknown: bool | None = None
    _implied_keys: tuple[str, ...] | None = None

    def __call__(self, key: Key) -> float:
        lex, cos = self.parts(key)
        return combine(lex, cos, self.unknown_name())

    def __post_init__(self) -> None:
        if self.query:  # a date's words are the time signal's (module docstring)
            said = {t for e in dates.expressions(self.query) for t in query_terms(memory_analyzer(), e)}
            self.terms = tuple(t for t in self.terms if t not in said) or self.terms

    def parts(self, key: Key) -> tuple[float, float | None]:
        """``(lexical part, cosine)`` of document ``key`` (the cosine ``None`` without vectors)."""
        lex = max(self._share(key, self.terms, TEXT_FIELDS, self._handle_terms(key)),
                  self._share(key, self.cjk, ("cjk",)))
        if not self.terms and not self.cjk:
            lex = self._named(key)
        elif self.terms and self._implied():
            lex = self._with_implied(key, lex)
        return lex, self._cosine(key)

    def _implied(self) -> tuple[str, ...]:
        """The handles the query names without one of its terms (``user`` for "I", "my"),
        worked out once per recall."""
        if self._implied_keys is None:
            terms = set(self.terms)
            self._implied_keys = tuple(e for e in self.entity_keys
                                       if not terms & set(query_terms(memory_analyzer(), e)))
        return self._implied_keys

    def _with_implied(self, key: Key, lex: float) -> float:
        """``lex`` with the implied handles as one more query word of the terms' mean idf when
        document ``key`` carries one of them (a first-person question about the user's own fact
        matches the fact written in the third person); never lower than ``lex``."""
        if not any(self._has(key, "entities", e) for e in self._implied()):
            return lex
        return (lex * len(self.terms) + 1.0) / (len(self.terms) + 1)

    def unknown_name(self) -> bool:
        """Whether the query names something no memory of the corpus mentions (``names``)."""
        if self._unknown is None:
            self._unknown = any(not any(self.stats.df(f, t) for f in TEXT_FIELDS)
                                for name in names(self.query or "")
                                for t in query_terms(memory_analyzer(), name))
        return self._unknown

    def _has(self, key: Key, fieldname: str, term: str) -> bool:
        i, d = key
        ids, _w = self.data[i].postings(self.readers[i], fieldname, term)  # document numbers ascending
        pos = int(np.searchsorted(ids, d))
        return pos < len(ids) and int(ids[pos]) == d

    def _weight(self, fieldname: str, term: str) -> float:
        k = (fieldname, term)
        if k not in self._idf:
            self._idf[k] = self.stats.idf(fieldname, term)
        return self._idf[k]

    def _share(self, key: Key, terms: tuple[str, ...], fields: tuple[str, ...],
               held: frozenset[str] = frozenset()) -> float:
        """The idf share of ``terms`` that document ``key`` holds in any of ``fields`` (or in
        ``held``)."""
        idf_field = fields[0]
        total = got = 0.0
        for t in terms:
            w = self._weight(idf_field, t)
            total += w
            if t in held or any(self._has(key, f, t) for f in fields):
                got += w
        return got / total if total > 0 else 0.0

    def _handle_terms(self, key: Key) -> frozenset[str]:
        """The analysed terms of the handles the query names that document ``key`` carries."""
        return frozenset(t for e in self.entity_keys if self._has(key, "entities", e)
                         for t in query_terms(memory_analyzer(), e))

    def _named(self, key: Key) -> float:
        """1 when document ``key`` carries one of the handles the query names, else 0."""
        return 1.0 if any(self._has(key, "entities", e) for e in self.entity_keys) else 0.0

    def _cosine(self, key: Key) -> float | None:
        if self.vector is None:
            return None
        i, d = key
        mat, present = self.data[i].vectors(self.readers[i])
        if mat.shape[1] != len(self.vector) or not present[d]:
            return None
        return float(np.dot(mat[d].astype(np.float64), self.vector.astype(np.float64)))
