"""The recall core emits its CloudWatch Embedded Metric Format lines (``chalicelib.metrics``): one
per recall (through the API and ``search.recall.recall``, ``as_of`` too), one per index catch-up
(revisions or a snapshot load) and one per rebuild."""

from __future__ import annotations

import json


def _emf(out: str, event: str) -> list[dict]:
    return [d for d in (json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"'))
            if d["Event"] == event]


def _metric_names(line: dict) -> set[str]:
    return {m["Name"] for m in line["_aws"]["CloudWatchMetrics"][0]["Metrics"]}


def _save(bank: str, text: str) -> None:
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    service.save_memory("o", bank, SaveRequest(text=text), actor="t")


def test_a_recall_through_the_api_emits_its_emf_line(api, cache, capsys):
    for text in ("zebra crossings at noon", "a zebra in the garden", "nothing to see"):
        status, _ = api.post("/v1/banks/main/memories", {"text": text})
        assert status in (200, 201)
    capsys.readouterr()
    status, body = api.post("/v1/banks/main/recall", {"query": "zebra"})
    assert status == 200 and len(body["memories"]) == 2
    out = capsys.readouterr().out
    (line,) = _emf(out, "recall")
    assert _metric_names(line) == {"RecallMs", "RecallCandidates", "RecallBanks"}
    assert line["RecallCandidates"] == 2 and line["RecallBanks"] == 1 and line["RecallMs"] >= 0
    assert line["retrieval"] == "bm25-entity+semantic"
    assert "zebra" not in json.dumps(line)  # never the query or memory text


def test_search_recall_emits_one_line_per_call_as_of_included(cache, capsys):
    from chalicelib.clock import now_ms
    from chalicelib.search.recall import recall
    _save("r", "quartz lamps and quartz clocks")
    capsys.readouterr()
    recall("o", ["r", "missing"], "quartz", limit=5)
    recall("o", ["r"], "quartz", limit=5, as_of=now_ms())
    lines = _emf(capsys.readouterr().out, "recall")
    assert [(d["retrieval"], d["RecallBanks"], d["RecallCandidates"]) for d in lines] == [
        ("bm25-entity+semantic", 1, 1), ("bm25-entity+as_of", 1, 1)]


def test_catch_up_snapshot_load_and_rebuild_emit_theirs(aws, tmp_path, capsys):
    from chalicelib.search import index
    from chalicelib.search.recall import ensure_fresh, rebuild
    a, b = index.IndexCache(str(tmp_path / "a")), index.IndexCache(str(tmp_path / "b"))
    with index.using(a):
        _save("r", "first memory")
        capsys.readouterr()
        ensure_fresh("o", "r")  # cold, no snapshot: a rebuild
        (built,) = _emf(capsys.readouterr().out, "index")
        assert _metric_names(built) == {"RebuildMs", "RebuildDocuments", "Rebuilds"}
        assert built["RebuildDocuments"] == 1 and built["Rebuilds"] == 1
    with index.using(b):  # another container writes: a's cache falls behind
        _save("r", "second memory")
        _save("r", "third memory")
    with index.using(a):
        capsys.readouterr()
        ensure_fresh("o", "r")
        (caught,) = _emf(capsys.readouterr().out, "index")
        assert _metric_names(caught) == {"CatchUpMs", "CatchUpChanges"}
        assert caught["CatchUpChanges"] == 2 and caught["source"] == "revisions"
        rebuild("o", "r")  # writes the snapshot at seq 3
    with index.using(index.IndexCache(str(tmp_path / "c"))):
        capsys.readouterr()
        ensure_fresh("o", "r")  # cold: loads the snapshot, nothing left to apply
        (loaded,) = _emf(capsys.readouterr().out, "index")
        assert loaded["source"] == "snapshot" and loaded["CatchUpChanges"] == 3
