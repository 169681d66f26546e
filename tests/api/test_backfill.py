"""Vector backfill (``chalicelib.banks.backfill``): a bank written while the model was not available
recalls lexically, is backfilled in bounded, resumable runs that leave every public view of its
memories as it was (records, revisions, updated_at, history, exports, as_of), and then recalls
semantically, in this container and in a warm or cold other one (no rebuild on the read path).
The coverage counter counts only the current model's vectors, across a model change."""

from __future__ import annotations

import contextlib

import pytest

from bench import paraphrase
from chalicelib import semantic
from chalicelib.banks import backfill
from chalicelib.core import store, vectors
from chalicelib.search import index
from chalicelib.search.schema import VECTOR_FIELD
from tests.api.search_support import write_old_snapshot

pytestmark = pytest.mark.skipif(not semantic.available(), reason="the model artifact is not built")

QUESTION, GOLD = "what database did we choose and why?", "o_db"
SAMPLE = ("o_db", "b_release", "a_launch")


@contextlib.contextmanager
def model_missing(monkeypatch, tmp_path):
    """The process as a deployment without the model artifact: ``CAIRN_MODEL_DIR`` names an empty
    folder and the model is loaded afresh (and fails), as in a new container."""
    empty = tmp_path / "no-model"
    empty.mkdir(exist_ok=True)
    with monkeypatch.context() as mp:
        mp.setattr(semantic, "_model", None)
        mp.setattr(semantic, "_failed", None)
        mp.setenv("CAIRN_MODEL_DIR", str(empty))
        assert not semantic.available()
        yield
    assert semantic.available()


def _text(set_id: str) -> str:
    return next(m.text for m in paraphrase.memories() if m.id == set_id)


def _recall(api, query, bank="sem", **kw):
    s, b = api.post(f"/v1/banks/{bank}/recall", {"query": query, **{"limit": 5, **kw}})
    assert s == 200, b
    return [h["memory"]["text"] for h in b["memories"]], b


def _import_paraphrase_set(api):
    raw = b"\n".join(paraphrase.import_lines_of()) + b"\n"
    s, b = api.post("/v1/banks/sem/import", raw=raw.decode(), headers={"Content-Type": "application/x-ndjson"})
    assert s == 200 and b["imported"] == len(paraphrase.memories()), b


def _public_views(api, as_of):
    """Everything a client can read of bank ``sem``'s memories."""
    s, listing = api.get("/v1/banks/sem/memories?limit=500&include_superseded=true")
    assert s == 200
    ids = {m["text"]: m["id"] for m in listing["memories"]}
    views = {"listing": listing, "export": api.get("/v1/banks/sem/export")[1],
             "export_history": api.get("/v1/banks/sem/export?history=true")[1],
             "as_of": _recall(api, "database choice release date", as_of=as_of, limit=20)[1]}
    for sid in SAMPLE:
        mid = ids[_text(sid)]
        views[f"get {sid}"] = api.get(f"/v1/banks/sem/memories/{mid}")[1]
        views[f"history {sid}"] = api.get(f"/v1/banks/sem/memories/{mid}/history")[1]
    return views


def _run_to_the_end(org, bank, limit=None):
    runs = []
    while not runs or not runs[-1].done:
        runs.append(backfill.backfill_bank(org, bank, limit=limit))
        assert runs[-1].status == "ran", runs[-1]
        assert len(runs) < 100
    return runs


def test_a_bank_written_without_the_model_recalls_semantically_after_backfill(api, monkeypatch, tmp_path):
    with model_missing(monkeypatch, tmp_path):
        _import_paraphrase_set(api)
        texts, body = _recall(api, QUESTION)
        assert body["retrieval"] == "bm25-entity+semantic-unavailable"
        assert _text(GOLD) not in texts  # the paraphrase misses lexically
        # a container that warmed its index while the bank had no vectors
        other = index.IndexCache(str(tmp_path / "other"))
        with index.using(other):
            assert _text(GOLD) not in _recall(api, QUESTION)[0]
        warm = dict(other.counters)
    n = len(paraphrase.memories())
    assert store.vector_coverage("default", "sem") == (0, n)
    as_of = int(api.get("/v1/banks/sem/memories?limit=1")[1]["memories"][0]["updated_at"]) + 1
    before = _public_views(api, as_of)

    runs = _run_to_the_end("default", "sem")
    assert len(runs) == -(-n // 200) + (n % 200 == 0)  # bounded runs of Settings.backfill_batch
    assert sum(r.embedded for r in runs) == n and runs[-1].with_vector == runs[-1].live == n
    assert store.vector_coverage("default", "sem") == (n, n)
    assert _public_views(api, as_of) == before  # records, revisions, updated_at, history, exports, as_of

    texts, body = _recall(api, QUESTION)
    assert body["retrieval"] == "bm25-entity+semantic" and _text(GOLD) in texts
    with index.using(other):  # the warm container learns the vectors through its catch-up
        assert _text(GOLD) in _recall(api, QUESTION)[0]
        assert other.counters["rebuilds"] == warm["rebuilds"] and other.counters["catchups"] > warm["catchups"]
    # one audit event per run, by the system actor; nothing is left to do
    s, page = api.get("/v1/audit?action=bank.backfill&limit=50")
    assert s == 200 and len(page["events"]) == len(runs), page
    assert {e["actor"] for e in page["events"]} == {backfill.ACTOR}
    assert sum(e["details"]["embedded"] for e in page["events"]) == n
    again = backfill.backfill_bank("default", "sem")
    assert again.status == "covered" and again.examined == 0


def _write_old_snapshot(org, bank, tmp_path) -> str:
    """An S3 snapshot of ``bank`` as the code before the vector field wrote it."""
    return write_old_snapshot(org, bank, tmp_path, VECTOR_FIELD)


def test_a_snapshot_written_before_vectors_loads_and_recalls_after_backfill(api, monkeypatch, tmp_path):
    with model_missing(monkeypatch, tmp_path):
        _import_paraphrase_set(api)
    key = _write_old_snapshot("default", "sem", tmp_path)
    _run_to_the_end("default", "sem", limit=500)
    cold = index.IndexCache(str(tmp_path / "cold"))
    with index.using(cold):
        texts, body = _recall(api, QUESTION)
    assert body["retrieval"] == "bm25-entity+semantic" and _text(GOLD) in texts
    assert cold.counters["snapshot_loads"] == 1 and cold.counters["rebuilds"] == 0, (key, cold.counters)


def _stored_vec(memory_id: str):
    item = store.get_item(store.get_bank_row("default", "bf").incarnation, memory_id)
    return vectors.decode(item.vec)


def test_runs_are_bounded_resumable_and_a_crash_redoes_at_most_one_batch(api, monkeypatch, tmp_path):
    texts = [f"Deploy step {w} runs after the {w} check" for w in
             ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf")]
    with model_missing(monkeypatch, tmp_path):
        ids = [api.post("/v1/banks/bf/memories", {"text": t})[1]["memory"]["id"] for t in texts]
        assert api.post("/v1/banks/bf/memories", {"text": "東京都の天気は晴れです"})[0] == 201
        assert api.delete(f"/v1/banks/bf/memories/{ids[-1]}")[0] == 200
    assert store.vector_coverage("default", "bf") == (0, 7)  # six English, one Japanese, one deleted

    # a run whose last transaction fails: the batches before it stay, the cursor does not move
    monkeypatch.setattr(backfill, "TX_RECORDS", 2)
    real = backfill._attempt

    def crash_at_the_end(btx, **kw):
        if kw["finish"] is not None:
            raise RuntimeError("the process died")
        return real(btx, **kw)

    monkeypatch.setattr(backfill, "_attempt", crash_at_the_end)
    with pytest.raises(RuntimeError):
        backfill.backfill_bank("default", "bf", limit=5)
    done_before = sum(_stored_vec(i) is not None for i in ids)  # the deleted memory too: it keeps its text
    assert 0 < done_before < 5
    monkeypatch.setattr(backfill, "_attempt", real)

    first = backfill.backfill_bank("default", "bf", limit=5)  # the same five memories again
    assert first.examined == 5 and not first.done
    rest = backfill.backfill_bank("default", "bf", limit=5)
    assert rest.done and rest.examined == 3 and rest.left == 1  # the Japanese text: the model does not cover it
    assert store.vector_coverage("default", "bf") == (6, 7)
    assert done_before + first.embedded + rest.embedded == 7  # each English text embedded once, none redone
    assert all(_stored_vec(i) is not None and _stored_vec(i).current_for(t) for i, t in zip(ids, texts, strict=True))
    # the finished pass noted what it could not embed: no new pass, no scan, no event
    assert backfill.backfill_bank("default", "bf").status == "covered"
    s, page = api.get("/v1/audit?action=bank.backfill")
    assert sorted((e["details"]["done"], e["details"]["examined"]) for e in page["events"]) == [(False, 5), (True, 3)]
    # the texts embedded counted as the system's work
    s, usage = api.get("/v1/usage?group_by=token")
    assert s == 200, usage
    got = {g["key"]: g["totals"] for g in usage["groups"]}
    assert got[backfill.ACTOR]["texts_embedded"] == 7 and got[backfill.ACTOR]["operations"] == {"backfill": 3}


def test_coverage_counts_only_the_current_model_across_a_model_change(api, monkeypatch):
    texts = ["Invoices are sent on the first working day", "The cache is flushed every night",
             "Our staging cluster runs in Frankfurt"]
    ids = [api.post("/v1/banks/bf/memories", {"text": t})[1]["memory"]["id"] for t in texts]
    assert store.vector_coverage("default", "bf") == (3, 3)
    monkeypatch.setattr(semantic, "MODEL_ID", "minilm-next")  # a deployment with another model
    assert store.vector_coverage("default", "bf") == (0, 3)  # old-model vectors are not current
    assert api.post("/v1/banks/bf/memories", {"text": "Releases go out on Tuesdays"})[0] == 201
    s, _b = api.patch(f"/v1/banks/bf/memories/{ids[0]}", {"text": "Invoices are sent on the second working day"})
    assert s == 200
    with_vector, live = store.vector_coverage("default", "bf")
    assert (with_vector, live) == (2, 4)  # the two written under the new model, never the old ones
    _run_to_the_end("default", "bf")
    assert store.vector_coverage("default", "bf") == (4, 4)
    assert all(_stored_vec(i).model == "minilm-next" for i in ids)


def test_the_schedule_and_the_cli_run_every_bank_a_bounded_amount(api, monkeypatch, tmp_path):
    import io
    import json

    from chalicelib import cli
    from chalicelib.events import schedules
    with model_missing(monkeypatch, tmp_path):
        for i in range(3):
            assert api.post("/v1/banks/one/memories", {"text": f"Rotation {i} of the on-call schedule"})[0] == 201
        s, _b = api.post("/v1/api/memories", {"name": "deploy_window", "description": "when we ship",
                                              "content": "Releases go out on Tuesdays"})
        assert s in (200, 201)
        assert schedules.backfill_vectors()["status"] == "skipped"  # no model: nothing is written
    assert api.post("/v1/banks/two/memories", {"text": "The VPN needs the new certificate"})[0] == 201
    monkeypatch.setenv("CAIRN_BACKFILL_BATCH", "2")
    with monkeypatch.context() as mp:  # a tick whose time is up starts no bank's run
        mp.setattr(schedules, "BACKFILL_BUDGET_S", 0.0)
        assert schedules.backfill_vectors() == {"job": "backfill_vectors", "status": "ran", "banks": [], "embedded": 0}
    report = schedules.backfill_vectors()
    assert report["status"] == "ran" and report["embedded"] == 3, report  # two of bank one, the structured one
    assert "default/one" in report["banks"] and "default/two" not in report["banks"]  # two is covered
    assert any(b.startswith("default/!") for b in report["banks"])  # a structured scope's namespace too
    assert store.vector_coverage("default", "one") == (2, 3)

    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["--stage", "dev", "backfill-vectors", "--org", "default", "--bank", "one", "--limit", "5"],
                    out=out, err=err) == 0, err.getvalue()
    [line] = out.getvalue().splitlines()
    got = json.loads(line)
    assert got["status"] == "ran" and got["embedded"] == 1 and got["done"] and got["with_vector"] == got["live"] == 3
    s, page = api.get("/v1/audit?action=bank.backfill&target=one")
    assert s == 200 and sorted(e["details"].get("on_behalf_of", "")[:4] for e in page["events"]) == ["", "cli:"]
    assert cli.main(["--stage", "dev", "backfill-vectors", "--bank", "one"], out=out, err=err) == 2
    with pytest.raises(SystemExit) as bad:
        cli.main(["--stage", "dev", "backfill-vectors", "--org", "default", "--limit", "0"], out=out, err=err)
    assert bad.value.code == 2
