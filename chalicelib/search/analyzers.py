"""Whoosh analyzers fit for memories, not only English prose.

* ``memory_analyzer()`` (fields ``text``, ``name``, ``description``): Unicode alphanumeric runs
  (identifiers keep their inner ``.``, ``_``, ``-``), each identifier kept whole AND split into its
  parts (``os.path.join`` -> ``os.path.join``, ``os``, ``path``, ``join``; ``parseHttpHeader`` ->
  ``parsehttpheader``, ``parse``, ``http``, ``header``) by Whoosh's ``IntraWordFilter`` (which must
  see the original case, so it runs before ``LowercaseFilter``), lower-cased, accent-folded
  (``CharsetFilter(accent_map)``: ``cafe`` finds ``café``), English stopwords dropped and Porter
  stemming for Latin-script words. CJK characters are left out of this field.
* ``cjk_analyzer()`` (field ``cjk``): every run of CJK characters as overlapping bigrams plus
  single characters, so ``天気`` finds ``東京都の天気は晴れです`` (Whoosh would otherwise keep the
  unspaced run as one token). At query time a run of two or more characters yields bigrams only.
* ``first_person(query)``: whether the query says I, me, my, mine or myself; recall then also
  matches the entity handle ``user`` (the bank worker's convention).
* ``entity_keys(query)``: the candidate entity handles a query names (its words and word n-grams,
  lower-cased), matched exactly against the ``entities`` field.
"""

from __future__ import annotations

from functools import lru_cache

from whoosh.analysis import STOP_WORDS as _WHOOSH_STOP
from whoosh.analysis import (
    CharsetFilter,
    Filter,
    IntraWordFilter,
    LowercaseFilter,
    RegexTokenizer,
    StemFilter,
    StopFilter,
    Tokenizer,
)
from whoosh.analysis.acore import Token
from whoosh.analysis.analyzers import Analyzer
from whoosh.support.charset import accent_map

from .. import patterns
from . import whoosh_private

# CJK Unified Ideographs (+ext A, compatibility), Hiragana, Katakana, Hangul syllables and jamo.
CJK_CLASS = ("\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31ff\u3400-\u4dbf"
             "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f")
_HOT = "on every text indexed and every query"
_CJK_RUN = patterns.stdlib(f"[{CJK_CLASS}]+", f"a run of one class, {_HOT}")
# A word: alphanumeric run (no CJK), optionally joined by . _ - ' into an identifier.
WORD_PATTERN = rf"[^\W{CJK_CLASS}]+(?:[._\-'][^\W{CJK_CLASS}]+)*"
# runs of one class joined by single characters outside it: a join that fails gives back one character
_WORD = patterns.stdlib(WORD_PATTERN, f"the tokenizer, {_HOT}")
_DELIMS = patterns.stdlib(r"[._\-']", f"one class, {_HOT}")
_FIELD_SEPARATED = patterns.stdlib(r"[^\x1f]+", f"a run of one class, {_HOT}")
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})
USER_HANDLE = "user"
MAX_ENTITY_NGRAM = 4
# Whoosh's short English list plus pronouns, auxiliaries and question words: words a memory or a
# question is full of that say nothing about which memory is meant.
STOP_WORDS = frozenset(_WHOOSH_STOP) | FIRST_PERSON | frozenset(
    ["am", "was", "were", "been", "being", "do", "does", "did", "done", "has", "had", "having", "he", "him", "his",
     "she", "her", "hers", "they", "them", "their", "theirs", "it", "its", "our", "ours", "you", "yours", "what",
     "which", "who", "whom", "whose", "where", "why", "how", "than", "then", "there", "these", "those", "so",
     "such", "too", "very", "just", "about", "into", "over", "also", "would", "should", "could", "shall"])


class KeepWholeIntraWordFilter(Filter):
    """Yields each token whole, then, when ``IntraWordFilter`` splits it into two or more parts,
    the parts as well (an identifier is findable whole and by each piece)."""

    is_morph = True

    def __init__(self) -> None:
        # digits stay inside their word (sha256, utf8, ipv6): splitting them matched noise
        self.iwf = IntraWordFilter(splitnums=False, mergewords=False, mergenums=False)

    def __call__(self, tokens):
        delims = _DELIMS.search
        for t in tokens:
            txt = t.text
            if (txt.islower() or txt.isupper() or txt.istitle() or txt.isdigit()) and not delims(txt):
                yield t  # nothing to split (the hot path: no copy, no sub-stream)
                continue
            whole = t.copy()
            yield t
            parts = [p.copy() for p in self.iwf(iter([whole]))]
            if len(parts) > 1:
                yield from parts


class CachedStemFilter(StemFilter):
    """Whoosh's ``StemFilter`` (Snowball, pure Python) with ``functools.lru_cache`` in place of
    Whoosh's own LFU cache, which cost more per token than the stemming it saved."""

    def clear(self):
        from whoosh.lang import stemmer_for_language
        whoosh_private.set_stemmer(self, lru_cache(maxsize=self.cachesize)(stemmer_for_language(self.lang)))


class CJKBigramTokenizer(Tokenizer):
    """Tokenizer for the ``cjk`` field: per CJK run, overlapping bigrams, plus single characters
    when indexing (or when the run is one character long)."""

    is_morph = False

    def __call__(self, value, positions=False, chars=False, keeporiginal=False, removestops=True,
                 start_pos=0, start_char=0, tokenize=True, mode="", **kwargs):
        t = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        pos = start_pos
        for m in _CJK_RUN.finditer(value):
            run = m.group()
            grams = [run[i:i + 2] for i in range(len(run) - 1)]
            if mode != "query" or len(run) == 1:
                grams += list(run)
            for g in grams:
                t.text = g
                t.boost = 1.0
                t.stopped = False
                if keeporiginal:
                    t.original = g
                if positions:
                    t.pos = pos
                    pos += 1
                if chars:
                    t.startchar = start_char + m.start()
                    t.endchar = start_char + m.end()
                yield t


@lru_cache(maxsize=1)
def memory_analyzer() -> Analyzer:
    """The analyzer of ``text``, ``name`` and ``description`` (see the module docstring)."""
    return (RegexTokenizer(_WORD) | KeepWholeIntraWordFilter() | LowercaseFilter()
            | CharsetFilter(accent_map) | StopFilter(stoplist=STOP_WORDS, minsize=1)
            | CachedStemFilter(lang="en", cachesize=200_000))


@lru_cache(maxsize=1)
def cjk_analyzer() -> Analyzer:
    """The analyzer of the ``cjk`` field: CJK bigrams (see the module docstring)."""
    return CJKBigramTokenizer() | LowercaseFilter()


def has_cjk(text: str | None) -> bool:
    """Whether ``text`` holds a CJK character, i.e. whether ``cjk_analyzer`` yields any token."""
    return bool(text) and _CJK_RUN.search(text or "") is not None


def handle_analyzer() -> Analyzer:
    """Entities and tags: each handle one exact token (handles are stored lower-cased already)."""
    return RegexTokenizer(_FIELD_SEPARATED)


HANDLE_SEP = "\x1f"


def query_terms(field_analyzer: Analyzer, text: str) -> list[str]:
    """The distinct analysed query tokens of ``text`` in first-seen order (never parsed syntax)."""
    out: list[str] = []
    for t in field_analyzer(text, mode="query"):
        if t.text and t.text not in out:
            out.append(t.text)
    return out


def words(text: str) -> list[str]:
    """Lower-cased words of ``text`` (identifiers whole), before stopwords and stemming."""
    return [w.lower() for w in _WORD.findall(text)]


def first_person(text: str) -> bool:
    """True when ``text`` uses a first-person word (I, me, my, mine, myself)."""
    return any(w in FIRST_PERSON for w in words(text))


def entity_keys(text: str) -> list[str]:
    """Handles the query may name: each word and each run of 2..4 words joined by a space, plus
    ``user`` for a first-person query. Matched exactly against stored (lower-cased) handles."""
    ws = words(text)
    keys: list[str] = []
    for n in range(1, MAX_ENTITY_NGRAM + 1):
        for i in range(len(ws) - n + 1):
            k = " ".join(ws[i:i + n])
            if len(k) <= 64 and k not in keys:
                keys.append(k)
    for cjk in _CJK_RUN.findall(text):
        if cjk not in keys:
            keys.append(cjk)
    if first_person(text) and USER_HANDLE not in keys:
        keys.append(USER_HANDLE)
    return keys
