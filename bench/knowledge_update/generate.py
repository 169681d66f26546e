"""Writes ``bank.json``, ``pairs.json`` and ``questions.json`` of the knowledge-update set from the
hand-written lists of ``templates.py``: ``python -m bench.knowledge_update.generate``. Deterministic
(one seeded generator, fixed iteration order): running it again rewrites the same bytes, which
tests/unit/test_knowledge_update_set.py checks. ``wild.json`` is hand-written and not touched here.

Every subject gets one memory per attribute of its kind (a "slot"); a slot plays one role:
``conflict`` (an old fact, later its correction), ``duplicate`` (a fact, later the same fact in
other words), ``lookalike`` (a fact whose template and attribute another subject's later fact
repeats), or a plain fact (a filler). Filler attributes only ever give plain facts.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .templates import ABSENT_SUBJECTS, ATTRIBUTES, FILLERS, KINDS, SUBJECTS, Attribute

DIR = Path(__file__).resolve().parent
SEED = 20260301
LOOKALIKES_PER_SPLIT = 60


@dataclass(frozen=True)
class Subject:
    kind: str
    name: str  # bare: "billing service"
    split: str

    @property
    def inline(self) -> str:
        return self.name if self.kind in ("project", "person") else f"the {self.name}"

    @property
    def slug(self) -> str:
        bare = self.name.removesuffix(" team") if self.kind == "team" else self.name
        return bare.lower().replace(" ", "-")

    def fill(self, template: str, **values: str) -> str:
        s = self.inline
        return template.format(s=s, S=s[0].upper() + s[1:], n=self.name, **values)


@dataclass
class Built:
    bank: list[dict[str, Any]] = field(default_factory=list)
    pairs: list[dict[str, Any]] = field(default_factory=list)
    questions: list[dict[str, Any]] = field(default_factory=list)
    later: dict[str, str] = field(default_factory=dict)  # later memory id -> the id it must follow


def marked(text: str) -> tuple[str, str | None]:
    """``text`` without its ``[...]`` marks, and the marked span (``None`` when unmarked)."""
    if "[" not in text:
        return text, None
    a, b = text.index("["), text.index("]")
    return text[:a] + text[a + 1:b] + text[b + 1:], text[a + 1:b]


def subjects(rng: random.Random) -> list[Subject]:
    """Every subject of the bank with its split: within each kind, shuffled, the first half ``tune``."""
    out = []
    for kind in KINDS:
        names = list(SUBJECTS[kind])
        rng.shuffle(names)
        half = len(names) // 2
        out += [Subject(kind, n, "tune" if i < half else "eval") for i, n in enumerate(names)]
    return out


def _memory(b: Built, subj: Subject, mid: str, text: str) -> None:
    b.bank.append({"id": mid, "text": text, "subject": subj.name, "kind": subj.kind,
                   "entities": [subj.name.lower()], "split": subj.split})


def _values(attr: Attribute, subj: Subject, rng: random.Random, k: int) -> list[str]:
    return [v.format(slug=subj.slug) for v in rng.sample(attr.values, k)]


def _conflict(b: Built, subj: Subject, attr: Attribute, rng: random.Random) -> None:
    old_id, new_id = f"{subj.slug}.{attr.key}.old", f"{subj.slug}.{attr.key}.new"
    if attr.field == "negation":
        old_text, old = marked(subj.fill(rng.choice(attr.facts)))
        new_text, new = marked(subj.fill(rng.choice(attr.fixes)))
    else:
        old, new = _values(attr, subj, rng, 2)
        old_text = subj.fill(rng.choice(attr.facts), v=old)
        new_text = subj.fill(rng.choice(attr.fixes), old=old, new=new)
    _memory(b, subj, old_id, old_text)
    _memory(b, subj, new_id, new_text)
    b.later[new_id] = old_id
    b.pairs.append({"id": f"c.{subj.slug}.{attr.key}", "label": "conflict", "first": old_id, "second": new_id,
                    "attribute": attr.key, "field": attr.field, "old": old, "new": new,
                    "subjects": [subj.name], "split": subj.split})
    b.questions.append({"id": f"q.{subj.slug}.{attr.key}", "kind": "current",
                        "question": subj.fill(rng.choice(attr.asks)),
                        "gold": [new_id], "stale": [old_id], "subject": subj.name, "split": subj.split})


def _duplicate(b: Built, subj: Subject, attr: Attribute, rng: random.Random) -> None:
    first, second = f"{subj.slug}.{attr.key}.fact", f"{subj.slug}.{attr.key}.dup"
    v = _values(attr, subj, rng, 1)[0] if attr.values else ""
    _memory(b, subj, first, marked(subj.fill(rng.choice(attr.facts), v=v))[0])
    _memory(b, subj, second, subj.fill(rng.choice(attr.dups), v=v))
    b.later[second] = first
    b.pairs.append({"id": f"d.{subj.slug}.{attr.key}", "label": "duplicate", "first": first, "second": second,
                    "attribute": attr.key, "field": None, "old": None, "new": None,
                    "subjects": [subj.name], "split": subj.split})


def _fact(b: Built, subj: Subject, attr: Attribute, rng: random.Random, template: int | None = None,
          value: str | None = None) -> str:
    """A plain fact of ``subj`` about ``attr``; returns the value it states."""
    v = value if value is not None else (_values(attr, subj, rng, 1)[0] if attr.values else "")
    t = attr.facts[template if template is not None else rng.randrange(len(attr.facts))]
    _memory(b, subj, f"{subj.slug}.{attr.key}.fact", marked(subj.fill(t, v=v))[0])
    return v


def _candidate_pairs(free: list[tuple[Subject, Attribute]], rng: random.Random,
                     split: str) -> list[tuple[Subject, Subject, Attribute]]:
    """Pairs of free slots of one attribute on two subjects of ``split``, taken one attribute at a
    time in turn so that every attribute gives look-alikes."""
    by_attr: dict[str, list[Subject]] = {}
    attrs: dict[str, Attribute] = {}
    for subj, attr in free:
        if subj.split == split:
            by_attr.setdefault(attr.key, []).append(subj)
            attrs[attr.key] = attr
    queues = []
    for key in sorted(by_attr):
        subs = by_attr[key]
        rng.shuffle(subs)
        queues.append([(a, c, attrs[key]) for a, c in zip(subs[0::2], subs[1::2], strict=False)])
    out = []
    while any(queues):
        out += [q.pop(0) for q in queues if q]
    return out[:LOOKALIKES_PER_SPLIT]


def _lookalikes(b: Built, free: list[tuple[Subject, Attribute]], rng: random.Random) -> None:
    """Pairs two free slots of one attribute, in one split, on two subjects: the later fact repeats
    the earlier one's template (and, one time in four, its value). The other free slots get a plain fact."""
    used: set[tuple[str, str]] = set()
    for split in ("tune", "eval"):
        for i, (a, c, attr) in enumerate(_candidate_pairs(free, rng, split)):
            t = rng.randrange(len(attr.facts))
            va = _fact(b, a, attr, rng, t)
            same = i % 4 == 3 or not attr.values
            vc = va if same else next(v for v in _values(attr, c, rng, len(attr.values)) if v != va)
            _fact(b, c, attr, rng, t, vc)
            first, second = f"{a.slug}.{attr.key}.fact", f"{c.slug}.{attr.key}.fact"
            used |= {(a.name, attr.key), (c.name, attr.key)}
            b.later[second] = first
            b.pairs.append({"id": f"u.{a.slug}.{c.slug}.{attr.key}", "label": "unrelated", "first": first,
                            "second": second, "attribute": attr.key, "field": None, "old": None, "new": None,
                            "subjects": [a.name, c.name], "split": split})
            b.questions.append({"id": f"q.{c.slug}.{attr.key}", "kind": "lookalike",
                                "question": c.fill(rng.choice(attr.asks)), "gold": [second], "stale": [],
                                "subject": c.name, "split": split})
    for subj, attr in free:
        if (subj.name, attr.key) not in used:
            _fact(b, subj, attr, rng)


def _no_answer(b: Built, rng: random.Random) -> None:
    for kind in KINDS:
        names = list(ABSENT_SUBJECTS[kind])
        rng.shuffle(names)
        for i, name in enumerate(names):
            subj = Subject(kind, name, "tune" if i < len(names) // 2 else "eval")
            for attr in rng.sample(ATTRIBUTES[kind], 2):
                b.questions.append({"id": f"n.{subj.slug}.{attr.key}", "kind": "no_answer",
                                    "question": subj.fill(rng.choice(attr.asks)), "gold": [], "stale": [],
                                    "subject": name, "split": subj.split})


def _save_order(b: Built, rng: random.Random) -> None:
    """``order`` 1..N: every memory a random moment in [0, 1); a later memory of a pair a random moment
    between its earlier one's and 1, so each correction, rewording and look-alike follows its pair."""
    at: dict[str, float] = {}
    for m in b.bank:
        if m["id"] not in b.later:
            at[m["id"]] = rng.random()
    for m in b.bank:
        if m["id"] in b.later:
            t0 = at[b.later[m["id"]]]
            at[m["id"]] = t0 + (1 - t0) * rng.uniform(0.05, 1.0)
    b.bank.sort(key=lambda m: at[m["id"]])
    for i, m in enumerate(b.bank, 1):
        m["order"] = i


def build() -> Built:
    """The whole generated set, in file order."""
    rng = random.Random(SEED)
    b = Built()
    free: list[tuple[Subject, Attribute]] = []
    for i, subj in enumerate(subjects(rng)):
        attrs = list(ATTRIBUTES[subj.kind])
        rng.shuffle(attrs)
        n_conf, n_dup = (3 if i % 2 == 0 else 2), (2 if i % 3 == 0 else 1)
        for attr in attrs[:n_conf]:
            _conflict(b, subj, attr, rng)
        for attr in attrs[n_conf:n_conf + n_dup]:
            _duplicate(b, subj, attr, rng)
        free += [(subj, a) for a in attrs[n_conf + n_dup:]]
        for attr in FILLERS[subj.kind]:
            _fact(b, subj, attr, rng)
    _lookalikes(b, free, rng)
    _no_answer(b, rng)
    _save_order(b, rng)
    return b


def dumps(rows: list[dict[str, Any]]) -> str:
    """A JSON array, one record a line (readable diffs)."""
    return "[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n]\n"


def files() -> dict[str, str]:
    """``{file name: text}`` of the generated files."""
    b = build()
    return {"bank.json": dumps(b.bank), "pairs.json": dumps(b.pairs), "questions.json": dumps(b.questions)}


def main() -> None:
    for name, text in files().items():
        (DIR / name).write_text(text, encoding="utf-8")
        print(f"wrote {name}: {text.count(chr(10)) - 2} records")


if __name__ == "__main__":
    main()
