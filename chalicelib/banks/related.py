"""Related memories at write time: is a live memory of the bank the same statement in other words
(``duplicate``) or the same thing about the same subject with another value (``conflict``)? Pure
functions, no I/O and no LLM call; the candidates come from the bank's index
(``search.neighbours``), this module only judges a pair.

A pair is judged on:

- **subject**: the two memories' entity handles when both have some (disjoint handles: another
  subject, never related); the names each text states otherwise (capitalised words that are not
  the sentence's first unless a second capitalised word follows it, as in "Aisha Bello leads":
  a name both state is the subject, a name only one states is a value);
- **similarity**: the cosine of the two sentence vectors (``chalicelib.semantic``), in [-1, 1];
- **values** (``values``): what a statement can disagree on, each a lower-cased token: numbers
  and anything holding a digit (versions, times, sizes, ``us-west-2``), URLs, ``#channels``,
  month and weekday names, and names; the subject's handles are not values;
- **correction cues** (``CUES``): words a correction is worded with ("now", "no longer",
  "moved", "instead", "switched", "stopped"...), and negation.

``relate`` keeps the candidates of the written memory's subject and judges the nearest of them
(and any as near): one statement per attribute, so the nearest of its subject is the one it can
restate or correct. ``judge`` answers ``conflict`` when the similarity is at least
``Thresholds.conflict``, the nearest stands ``Thresholds.margin`` above the next of its subject
(or the later names a value of it beside a new one with a correction word: "moved from X to Y"),
and either both state a value of one kind the other does not while sharing a content word
(``stems``: "launch", "budget"; two values of one kind on different attributes, a design doc's
URL and the code's, share none) or the later corrects (a cue only it has); ``duplicate`` when the
later states no value and no cue the earlier lacks and the similarity is at least
``Thresholds.duplicate`` (``duplicate_same_values`` when both state the same values). Else
nothing. The thresholds were chosen on the tuning part of ``bench/knowledge_update``
(``python -m bench --knowledge-update`` reports both parts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Relation = Literal["duplicate", "conflict"]
MAX_RELATED = 5  # related memories one write reports



def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


MONTHS = _words(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec")
WEEKDAYS = _words(
    "monday tuesday wednesday thursday friday saturday sunday "
    "mondays tuesdays wednesdays thursdays fridays saturdays sundays")
CUES = _words(
    "now no longer anymore instead moved moving switched switch changed replaced stopped stop "
    "dropped handed taken took over shifted retired pushed rescheduled bumped postponed delayed "
    "reduced raised increased lowered shortened extended cut left not never back migrated "
    "renamed transferred n't cancelled canceled")
# capitalised words that are never names (they open sentences)
_NOT_NAMES = _words(
    "i the a an we our they it this that these those on in at for to from of by with and "
    "or if when us use keep please")
STOP = _words(
    "the and for are was were has have had its our their his her is be been being with from into onto "
    "that this these those there which who whom what when where how all any each every per via out "
    "about after before over under than then also just only very can will would should must may "
    "does did done get gets got use uses used using one two")
STEM = 5  # characters of a content word compared (launch / launches / launched)
_EDGE = ".,;:!?()[]{}\"'\u201c\u201d\u2018\u2019"  # edge punctuation, curly quotes too


@dataclass(frozen=True)
class Thresholds:
    """The lowest sentence cosines at which a pair may be a ``duplicate`` / a ``conflict``, and
    ``margin``: how far above the next same-subject memory the candidate must stand."""

    duplicate: float = 0.75
    conflict: float = 0.55
    margin: float = 0.06
    unworded: float = 1.01  # the cosine above which a value conflict needs no content word in common
    duplicate_same_values: float = 0.40  # the lowest cosine of a duplicate stating the same values


DEFAULT = Thresholds()


@dataclass(frozen=True)
class Statement:
    """A memory's text as a pair is judged on it: its ``names`` (lower-cased words of names it
    states), ``values`` (``values``: names included) and ``cues`` (correction words)."""

    names: frozenset[str]
    values: frozenset[str]
    cues: frozenset[str]
    words: frozenset[str] = frozenset()  # every word, lower-cased
    stems: frozenset[str] = frozenset()  # content words (no value, subject or stop word), cut to STEM


@dataclass(frozen=True)
class Verdict:
    """A judged pair: ``relation``, ``score`` (the similarity, in [-1, 1]) and ``why`` (a short
    sentence a person reads)."""

    relation: Relation
    score: float
    why: str


def _tokens(text: str) -> list[tuple[str, bool]]:
    """``(word, opens a sentence)`` per whitespace-separated word, its edge punctuation and a
    possessive ``'s`` cut off; ``n't`` becomes a word of its own."""
    out: list[tuple[str, bool]] = []
    opens = True
    for raw in text.split():
        w = raw.strip(_EDGE)
        for tail in ("'s", "\u2019s"):
            if w.endswith(tail):
                w = w[: -len(tail)]
        if w:
            if w.lower().endswith("n't"):
                out.append((w[:-3], opens))
                out.append(("n't", False))
            else:
                out.append((w, opens))
        opens = raw.endswith((".", "!", "?", ";", ":")) and not any(c.isdigit() for c in raw[-2:-1])
    return out


def _is_value(word: str) -> bool:
    low = word.lower()
    return (any(c.isdigit() for c in word) or "://" in word or word.startswith(("#", "@", "$"))
            or low in MONTHS or low in WEEKDAYS or ("." in word.strip(".") and low.isascii() and "/" in low))


def kind(value: str) -> str:
    """The kind of a value (``statement``): ``url``, ``weekday``, ``date`` (a month, a year, an
    ordinal day), ``time`` (``10:00``), ``number``, ``code`` (letters and digits: ``us-west-2``,
    ``utc+3``) or ``name``. Two statements disagree only on values of one kind."""
    if "://" in value or ("/" in value and "." in value):
        return "url"
    if value in WEEKDAYS:
        return "weekday"
    bare = value.strip("$%~").replace(",", "")
    if value in MONTHS or (bare.isdigit() and len(bare) == 4 and bare[:2] in ("19", "20")) \
            or (bare[:-2].isdigit() and bare[-2:] in ("st", "nd", "rd", "th")):
        return "date"
    if ":" in bare and bare.replace(":", "").isdigit():
        return "time"
    if bare.replace(".", "", 1).isdigit():
        return "number"
    return "code" if any(c.isdigit() for c in value) else "name"


def _kinds(values: frozenset[str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for v in values:
        out.setdefault(kind(v), set()).add(v)
    return out


def statement(text: str, handles: frozenset[str] = frozenset()) -> Statement:
    """What ``judge`` reads of ``text``; ``handles``: the memory's entity handles (their words are
    the subject, not values)."""
    subject = frozenset(w for h in handles for w in h.split())
    names: set[str] = set()
    values: set[str] = set()
    cues: set[str] = set()
    toks = _tokens(text)
    for i, (w, opens) in enumerate(toks):
        low = w.lower()
        if low in CUES or (low == "longer" and i and toks[i - 1][0].lower() == "no"):
            cues.add(low)
        if low in subject:
            continue
        if _is_value(w):
            values.add(low)
        elif w[:1].isupper() and low not in _NOT_NAMES and (not opens or w[1:2].isupper() or _named_on(toks, i)):
            names.add(low)
            values.add(low)
    stems = frozenset(low[:STEM] for w, _o in toks if (low := w.lower()).isalpha() and len(low) > 2
                      and low not in values and low not in subject and low not in STOP and low not in CUES)
    return Statement(frozenset(names), frozenset(values), frozenset(cues), frozenset(w.lower() for w, _o in toks),
                     stems)


def _named_on(toks: list[tuple[str, bool]], i: int) -> bool:
    """Whether the word after ``toks[i]`` continues a name (capitalised, inside the sentence): a
    sentence opening with a two-word name ("Aisha Bello leads...") names its first word too."""
    if i + 1 >= len(toks):
        return False
    w, opens = toks[i + 1]
    return w[:1].isupper() and not opens and w.lower() not in _NOT_NAMES and not _is_value(w)


def same_subject(a_handles: frozenset[str], b_handles: frozenset[str], a: Statement, b: Statement) -> bool:
    """Whether two memories speak of one subject: their handles meet (when both have some); the
    one's handles are named in the other's text (when one has some); else they state a name in
    common or neither states a name."""
    if a_handles and b_handles:
        return bool(a_handles & b_handles)
    if a_handles or b_handles:  # one side has handles: the other must name one of them
        handles, other = (a_handles, b) if a_handles else (b_handles, a)
        return any(set(h.split()) <= other.words for h in handles)
    if a.names or b.names:
        return bool(a.names & b.names)
    return True


def judge(earlier: Statement, later: Statement, similarity: float, *, subject: bool,
          thresholds: Thresholds = DEFAULT) -> Verdict | None:
    """The relation of ``later`` (being written) to ``earlier`` (a live memory), or ``None``
    (module docstring). ``subject``: whether they speak of one subject (``same_subject``)."""
    if not subject:
        return None
    only_new = later.values - earlier.values
    only_old = earlier.values - later.values
    new_cues = later.cues - earlier.cues
    worded = bool(earlier.stems & later.stems) or similarity >= thresholds.unworded
    if similarity >= thresholds.conflict:
        old_kinds, new_kinds = _kinds(only_old), _kinds(only_new)
        if old_kinds.keys() & new_kinds.keys() and worded:
            return Verdict("conflict", similarity, _why_values(only_old, only_new))
        if new_cues:
            said = f"; it states {_list(only_new)}" if only_new else ""
            return Verdict("conflict", similarity, f"corrects it (\"{sorted(new_cues)[0]}\"){said}")
    same_values = bool(earlier.values & later.values) and not only_old
    if (similarity >= thresholds.duplicate or (same_values and similarity >= thresholds.duplicate_same_values)) \
            and not only_new and not new_cues:
        return Verdict("duplicate", similarity, "says the same in other words")
    return None


def _list(values: frozenset[str]) -> str:
    return ", ".join(sorted(values)[:3])


def _why_values(old: frozenset[str], new: frozenset[str]) -> str:
    return f"another value: {_list(new)} instead of {_list(old)}"


@dataclass(frozen=True)
class Candidate:
    """A live memory the index found near the one being written: its ``id``, ``statement``,
    entity ``handles`` and the sentence ``similarity`` with it."""

    id: str
    statement: Statement
    handles: frozenset[str]
    similarity: float


def relate(later: Statement, handles: frozenset[str], candidates: list[Candidate],
           thresholds: Thresholds = DEFAULT) -> list[tuple[str, Verdict]]:
    """The memories among ``candidates`` the memory being written (``later``, with entity
    ``handles``) duplicates or contradicts, best first, at most ``MAX_RELATED``. Only the
    candidates of its subject count, and of those only the nearest and any other as near as it
    (one statement per attribute: the nearest of its subject is the one it can restate or
    correct); a conflict only when it stands at least ``thresholds.margin`` above the next, or
    the later corrects it by naming its value (``_names_the_old_value``)."""
    mine = sorted((c for c in candidates if same_subject(c.handles, handles, c.statement, later)),
                  key=lambda c: -c.similarity)
    if not mine:
        return []
    runner_up = mine[1].similarity if len(mine) > 1 else -1.0
    clear = mine[0].similarity - runner_up >= thresholds.margin
    out = []
    for c in mine[:MAX_RELATED]:
        if c is not mine[0] and c.similarity < mine[0].similarity:
            break
        v = judge(c.statement, later, c.similarity, subject=True, thresholds=thresholds)
        if v is not None and (clear or v.relation == "duplicate" or _names_the_old_value(c.statement, later)):
            out.append((c.id, v))
    return out


def _names_the_old_value(earlier: Statement, later: Statement) -> bool:
    """Whether ``later`` corrects ``earlier`` by name: a correction word it alone has, a value of
    ``earlier`` and a new one ("moved from us-west-2 to ca-central-1")."""
    return bool(later.cues - earlier.cues) and bool(earlier.values & later.values) \
        and bool(later.values - earlier.values)
