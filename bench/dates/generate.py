"""Write ``bench/dates/set.json`` (``python -m bench.dates.generate``): the date-question set
(README.md). One seeded generator and a fixed order: it rewrites the same bytes, so change the
templates here and regenerate, never the JSON by hand."""

from __future__ import annotations

import json
import random
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

OUT = Path(__file__).resolve().parent / "set.json"
SEED = 20261207
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)  # a Monday; memory n (its order) is saved n hours later
NOW = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)  # when the questions are asked

SUBJECTS = ["Heron", "Osprey", "Plover", "Kestrel", "Avocet", "Dunlin", "Godwit", "Lapwing", "Merlin", "Petrel",
            "Puffin", "Shrike", "Siskin", "Starling", "Swift", "Tern", "Wagtail", "Wren", "Bunting", "Curlew",
            "Egret", "Gannet", "Harrier", "Ibis", "Jacana", "Linnet", "Nightjar", "Oriole", "Redstart", "Skua"]
EVENTS = ["launch", "security audit", "design review", "data migration", "team offsite", "contract renewal",
          "beta release", "price change"]
PEOPLE = ["Maya", "Tomas", "Priya", "Lena", "Omar", "Jun", "Sofia", "Ravi"]

# the memory stating the date: (template, how the date is written)
DATED = [
    ("{S}'s {e} is set for {d}.", "words"),
    ("The {S} {e} happens on {d}.", "iso"),
    ("We scheduled the {e} of {S} for {d}.", "day_month"),
    ("{S} {e}: {d}, confirmed by {p}.", "words"),
    ("The {e} for {S} moved to {d}.", "iso"),
    ("{p} booked the {S} {e} for {d}.", "ordinal"),
    ("{S} holds its {e} next {wd}.", "next_weekday"),
    ("The {S} {e} lands in {d}.", "month"),
]
# about the same subject and event, stating no date; the last two mention a time without one
UNDATED = [
    "{p} owns the {S} {e} checklist.",
    "The {S} {e} needs sign-off from legal before anything else.",
    "{S}'s {e} prep call runs every Monday.",
    "We talked about the {S} {e} budget a while ago.",
]
WHEN_Q = ["When is {S}'s {e}?", "What date is the {S} {e}?", "When does {S} have its {e}?"]
DATE_Q = ["What is happening on {d}?", "Which event is scheduled for {d}?", "What do we have on {d}?"]


def _write(d: date, how: str) -> str:
    month = d.strftime("%B")
    if how == "iso":
        return d.isoformat()
    if how == "day_month":
        return f"{d.day} {month} {d.year}"
    if how == "ordinal":
        suffix = "th" if 10 <= d.day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(d.day % 10, "th")
        return f"the {d.day}{suffix} of {month}"
    if how == "month":
        return f"{month} {d.year}"
    return f"{month} {d.day}, {d.year}"


def _ask(d: date, how: str) -> str:
    """The question's date, written otherwise than the memory's."""
    return f"{d.strftime('%B')} {d.day}, {d.year}" if how in ("iso", "day_month", "ordinal") else d.isoformat()


def build() -> dict:
    rng = random.Random(SEED)
    subjects = SUBJECTS[:]
    rng.shuffle(subjects)
    split = {s: ("tune" if i % 2 == 0 else "eval") for i, s in enumerate(subjects)}
    texts: list[dict] = []
    questions: list[dict] = []
    used: set[date] = set()
    slots = [(s, e) for s in SUBJECTS for e in rng.sample(EVENTS, 2)]
    rng.shuffle(slots)
    for k, (s, e) in enumerate(slots):
        template, how = DATED[k % len(DATED)]
        p = rng.choice(PEOPLE)
        saved = len(texts) + 1
        if how == "next_weekday":
            said = (START + timedelta(hours=saved)).date()
            wd = rng.choice(["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"])
            ahead = (["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"].index(wd) - said.weekday()) % 7 or 7
            d, shown = said + timedelta(days=ahead), wd
        else:
            d = date(2026, 1, 1) + timedelta(days=rng.randrange(365))
            while d in used or (how == "month" and d.day != 1):
                d = date(2026, 1, 1) + timedelta(days=rng.randrange(365)) if how != "month" else \
                    date(2026, rng.randrange(1, 13), 1)
            shown = _write(d, how)
        used.add(d)
        gold = f"m{len(texts) + 1:03d}"
        texts.append({"id": gold, "text": template.format(S=s, e=e, d=shown, p=p, wd=shown), "subject": s,
                      "split": split[s]})
        for u in UNDATED:
            texts.append({"id": f"m{len(texts) + 1:03d}", "text": u.format(S=s, e=e, p=rng.choice(PEOPLE)),
                          "subject": s, "split": split[s]})
        questions.append({"id": f"q{len(questions) + 1:03d}", "kind": "when", "split": split[s], "gold": [gold],
                          "question": rng.choice(WHEN_Q).format(S=s, e=e)})
        if how != "month":  # a month names no day to ask about
            questions.append({"id": f"q{len(questions) + 1:03d}", "kind": "date", "split": split[s], "gold": [gold],
                              "question": rng.choice(DATE_Q).format(d=_ask(d, how))})
    for i, m in enumerate(texts):
        m["order"] = i + 1  # each dated memory is saved just before its undated neighbours
    return {"start": int(START.timestamp() * 1000), "now": int(NOW.timestamp() * 1000), "memories": texts,
            "questions": questions}


def dumps() -> str:
    return json.dumps(build(), ensure_ascii=False, indent=1) + "\n"


if __name__ == "__main__":
    OUT.write_text(dumps(), encoding="utf-8")
    print(f"wrote {OUT}")
