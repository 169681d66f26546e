"""``python -m bench --knowledge-update``: write-time detection and the newer statement first on
the knowledge-update set (``bench/knowledge_update``), through the service's REST routes
(Chalice's test client over in-process moto, ``harness.backend``; the shipped sentence model).

- **flag**: the bank is saved in ``order`` into a bank with ``on_conflict: flag`` (each memory
  with its subject's entity handle); each save's ``related`` is a prediction ``(related memory,
  saved memory, relation)``. Then each question is recalled (limit ``LIMIT``): the current fact
  first (``score_questions``), the no-answer questions left empty and the gold memories lost with
  the bank's match threshold on against the same recall with the threshold 0; and what ranked
  first when the current fact did not (``causes``).
- **supersede**: what ``on_conflict: supersede`` would retire, from the flag bank's detections
  (each detected conflict retires its earlier side; tests/api/test_related.py holds the service
  to that): the look-alike pairs linked (``score_pairs``' count) and those with either memory
  retired by any detected conflict, out of all look-alike pairs. (Saving the bank a second time
  through the service with the setting on doubles the run's time on a shared machine.)
- **wild**: each hand-written pair saved (first, then second) into an empty bank of its own;
  precision and recall per relation, without a target.

Every figure per split (``tune``, ``eval``); the detection thresholds (``banks.related``) were
chosen on ``tune`` only. Thread counts are pinned to 1.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

# isort: split
import json
import sys
import time
from typing import Any

from . import knowledge_update as ku

LIMIT = 6  # the REST recall default
SPLITS = ("tune", "eval")


class Rest:
    """The app's routes through ``chalice.test.Client`` with an admin token: ``call`` returns
    ``(status, body)``."""

    def __init__(self) -> None:
        from chalice.test import Client

        from app import app
        from chalicelib.auth.principal import PERMISSIONS
        from chalicelib.auth.tokens import MintRequest, mint
        self.client = Client(app)
        scoped = self.client.http._config.scope(self.client.http._config.chalice_stage, "api_handler")
        os.environ.update(scoped.environment_variables)
        self.token = mint("default", MintRequest(kind="person", user_id="bench", permissions=list(PERMISSIONS)),
                          created_by="bench").token

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        h = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        resp = getattr(self.client.http, method.lower())(path, headers=h,
                                                          body=json.dumps(body) if body is not None else None)
        return resp.status_code, json.loads(resp.body) if resp.body else None


def save_bank(rest: Rest, bank: str, on_conflict: str) -> tuple[list[ku.Prediction], dict[str, str], set[str]]:
    """Save the set's bank in order into ``bank``: ``(predictions, {service id: set id}, set ids of
    the memories a save retired)``. Progress on stderr every 100 saves."""
    status, body = rest.call("POST", "/v1/banks", {"name": bank})
    assert status in (200, 201), body
    status, body = rest.call("PATCH", f"/v1/banks/{bank}", {"settings": {"on_conflict": on_conflict}})
    assert status == 200, body
    preds: list[ku.Prediction] = []
    ids: dict[str, str] = {}
    retired: set[str] = set()
    for m in ku.bank():
        status, body = rest.call("POST", f"/v1/banks/{bank}/memories", {"text": m.text, "entities": list(m.entities)})
        assert status in (200, 201), body
        ids[body["memory"]["id"]] = m.id
        if m.order % 100 == 0:
            print(f"knowledge-update: {m.order} saved", file=sys.stderr, flush=True)
        for r in body["related"]:
            first = ids.get(r["id"])
            if first is None:
                continue
            preds.append(ku.Prediction(first, m.id, r["relation"]))
            if r["action"] == "superseded":
                retired.add(first)
    return preds, ids, retired


def ask(rest: Rest, bank: str, ids: dict[str, str]) -> dict[str, list[str]]:
    """Each question recalled from ``bank``: question id -> set ids returned, best first."""
    out = {}
    for q in ku.questions():
        status, body = rest.call("POST", f"/v1/banks/{bank}/recall", {"query": q.question, "limit": LIMIT})
        assert status == 200, body
        out[q.id] = [ids.get(h["memory"]["id"], h["memory"]["id"]) for h in body["memories"]]
    return out


def wild(rest: Rest) -> list[ku.Prediction]:
    """Each wild pair into a bank of its own: the predictions, texts standing for ids."""
    preds = []
    for i, p in enumerate(ku.wild()):
        bank = f"wild-{i}"
        for text in (p.first, p.second):
            status, body = rest.call("POST", f"/v1/banks/{bank}/memories", {"text": text})
            assert status in (200, 201), body
        preds += [ku.Prediction(p.first, p.second, r["relation"]) for r in body["related"]]
    return preds


CAUSES = ("current first", "older first, linked", "older first, not linked", "same subject first",
          "other subject first", "nothing returned")


def causes(results: dict[str, list[str]], preds: list[ku.Prediction], split: str) -> dict[str, int]:
    """Why each question about a corrected fact of ``split`` has (or lacks) its current memory
    first: the first hit is the current one; the older one, linked as a conflict (the newer-first
    rule failed) or not (detection missed it); another memory of the same subject or of another
    one (ranking); nothing. ``results``: question id -> set ids best first."""
    linked = {frozenset((p.first, p.second)) for p in preds if p.label == "conflict"}
    subject = {m.id: m.subject for m in ku.bank()}
    out = dict.fromkeys(CAUSES, 0)
    for q in ku.split_questions(split):
        if q.kind != "current":
            continue
        top = next(iter(results.get(q.id) or ()), None)
        if top is None:
            cause = "nothing returned"
        elif top in q.gold:
            cause = "current first"
        elif top in q.stale:
            cause = "older first, linked" if any(frozenset((o, g)) in linked for o in q.stale for g in q.gold) \
                else "older first, not linked"
        else:
            cause = "same subject first" if subject.get(top) == q.subject else "other subject first"
        out[cause] += 1
    return out


def model_ceiling(split: str) -> float | None:
    """The share of ``split``'s questions about a corrected fact whose current memory is the
    nearest by sentence cosine alone among its subject's memories, the older side left out (as
    if the newer-first rule and detection were perfect): what the shipped model can tell apart
    by meaning. ``None`` without the model."""
    from chalicelib import semantic

    if not semantic.available():
        return None
    bank = ku.bank()
    vecs = dict(zip([m.id for m in bank], semantic.embed_documents([m.text for m in bank]), strict=True))
    qs = [q for q in ku.split_questions(split) if q.kind == "current"]
    hits = 0
    for q in qs:
        qv = semantic.embed_query(q.question)
        pool = [m.id for m in bank if m.subject == q.subject and m.id not in q.stale and vecs[m.id] is not None]
        if qv is not None and pool:
            hits += max(pool, key=lambda i: float(qv @ vecs[i])) in q.gold
    return round(hits / len(qs), 3) if qs else None


def _score(s: ku.LinkScore) -> dict[str, Any]:
    return {"precision": round(s.precision, 3), "recall": round(s.recall, 3), "tp": s.tp, "fp": s.fp, "fn": s.fn}


def figures() -> dict[str, Any]:
    """Every figure of the three parts (module docstring)."""
    rest = Rest()
    preds, ids, _ = save_bank(rest, "ku-flag", "flag")
    with_threshold = ask(rest, "ku-flag", ids)
    status, body = rest.call("PATCH", "/v1/banks/ku-flag", {"settings": {"match_threshold": 0}})
    assert status == 200, body
    without = ask(rest, "ku-flag", ids)
    retired = {p.first for p in preds if p.label == "conflict"}
    data: dict[str, Any] = {}
    for split in SPLITS:
        ps = ku.score_pairs(preds, split)
        qs = ku.score_questions(with_threshold, split, baseline=without)
        first_off = ku.score_questions(without, split).current_first
        looks = [p for p in ku.split_pairs(split) if p.label == "unrelated"]
        gone = sum(1 for p in looks if p.first in retired or p.second in retired)
        data[split] = {"conflict": _score(ps.conflict), "duplicate": _score(ps.duplicate),
                       "lookalikes_linked_flag": f"{ps.lookalikes_linked}/{ps.lookalikes}",
                       "lookalikes_retired_supersede": round(gone / len(looks), 3) if looks else 0.0,
                       "lookalikes_retired_count": f"{gone}/{len(looks)}",
                       "current_first": round(qs.current_first, 3), "current_first_threshold_off": round(first_off, 3),
                       "no_answer_empty": round(qs.no_answer_empty, 3), "gold_loss": round(qs.gold_loss, 3),
                       "current_first_causes": causes(with_threshold, preds, split),
                       "model_ceiling": model_ceiling(split)}
    w = ku.score_pairs(wild(rest), gold=ku.wild())
    data["wild"] = {"conflict": _score(w.conflict), "duplicate": _score(w.duplicate),
                    "lookalikes_linked": f"{w.lookalikes_linked}/{w.lookalikes}"}
    return data


def run() -> tuple[dict[str, Any], list[str]]:
    """``(json, markdown lines)`` of the knowledge-update part."""
    from .harness import backend

    started = time.perf_counter()
    with backend():
        data = figures()
    data["seconds"] = round(time.perf_counter() - started, 1)
    md = ["## Knowledge update (write-time detection, newer statement first)", "",
          f"{len(ku.bank())} memories saved in order through REST; {LIMIT} hits per question. Targets on eval: "
          "conflict and duplicate recall >= 0.8 at precision >= 0.9, look-alikes retired < 2%, current fact "
          "first >= 90%.", "",
          "| part | conflict P / R | duplicate P / R | look-alikes linked / retired (supersede) | current first "
          "(threshold off) | no-answer empty | gold lost |", "|---|---|---|---|---|---|---|"]
    for split in SPLITS:
        d = data[split]
        md.append(f"| {split} | {d['conflict']['precision']} / {d['conflict']['recall']} | "
                  f"{d['duplicate']['precision']} / {d['duplicate']['recall']} | {d['lookalikes_linked_flag']} / "
                  f"{d['lookalikes_retired_count']} | "
                  f"{d['current_first']} ({d['current_first_threshold_off']}) | {d['no_answer_empty']} | "
                  f"{d['gold_loss']} |")
    md += ["", "Questions about a corrected fact, by what ranked first (with the threshold on):", "",
           "| part | " + " | ".join(CAUSES) + " |", "|---|" + "---|" * len(CAUSES)]
    md += [f"| {split} | " + " | ".join(str(data[split]["current_first_causes"][c]) for c in CAUSES) + " |"
           for split in SPLITS]
    md += ["", "The model's ceiling (the current memory nearest the question by sentence cosine alone among "
           "its subject's memories, the older side left out): " +
           ", ".join(f"{split} {data[split]['model_ceiling']}" for split in SPLITS) + "."]
    w = data["wild"]
    md += ["", f"Wild pairs (36, free wording, no target): conflict P {w['conflict']['precision']} / R "
           f"{w['conflict']['recall']}, duplicate P {w['duplicate']['precision']} / R {w['duplicate']['recall']}, "
           f"look-alikes linked {w['lookalikes_linked']}.", ""]
    return data, md


if __name__ == "__main__":
    d, lines = run()
    print("\n".join(lines))
