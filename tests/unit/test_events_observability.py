"""Observability as a unit: the shape of an EMF metric line."""

from __future__ import annotations

import json

from chalicelib import metrics


def test_emf_shape(capsys):
    doc = metrics.recall_latency(4.25, banks=2, candidates=50, retrieval="bm25-entity")
    line = json.loads(capsys.readouterr().out.strip())
    assert line == doc
    directive = line["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == "Cairn" and directive["Dimensions"] == [["Stage", "Event"]]
    assert {m["Name"]: m["Unit"] for m in directive["Metrics"]} == {
        "RecallMs": "Milliseconds", "RecallCandidates": "Count", "RecallBanks": "Count"}
    assert line["RecallMs"] == 4.25 and line["retrieval"] == "bm25-entity" and line["Event"] == "recall"
    assert isinstance(line["_aws"]["Timestamp"], int)
