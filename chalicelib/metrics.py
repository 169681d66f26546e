"""Metrics as CloudWatch Embedded Metric Format log lines.

One JSON object per line on stdout; CloudWatch Logs turns each into metrics in namespace
``Cairn`` with dimensions ``[Stage, Event]``. Others call one function::

    metrics.emit("recall", {"RecallMs": 4.2, "Candidates": 50}, {"retrieval": "bm25-entity"})

Names ending in ``Ms`` are milliseconds, the rest counts. ``properties`` are searchable fields of
the log line, not metrics: never put memory text, queries or tokens in them. The recall core
emits through three helpers: ``recall_latency`` (every recall, ``search.recall.recall``),
``index_catch_up`` and ``index_rebuild`` (``search.index.IndexCache``). ``Stage`` is
``Settings.stage``. Emitting never raises.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Mapping
from typing import Any

from .clock import now_ms
from .settings import get_settings

NAMESPACE = "Cairn"
_lock = threading.Lock()


def _unit(name: str) -> str:
    return "Milliseconds" if name.endswith("Ms") else "Count"


def _stage() -> str:
    return get_settings().stage


def emit(event: str, values: Mapping[str, float], properties: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    """Write one EMF line for ``event`` (e.g. ``recall``, ``index``, ``extraction``) with metric
    ``values`` (numbers) and optional ``properties``; returns the JSON object written (empty when
    writing failed)."""
    try:
        metrics = {k: float(v) for k, v in values.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        doc: dict[str, Any] = {
            "_aws": {"Timestamp": now_ms(), "CloudWatchMetrics": [{
                "Namespace": NAMESPACE, "Dimensions": [["Stage", "Event"]],
                "Metrics": [{"Name": k, "Unit": _unit(k)} for k in metrics]}]},
            "Stage": _stage(), "Event": event}
        for k, v in (properties or {}).items():
            if k not in doc and k not in metrics:
                doc[k] = v if isinstance(v, (str, int, float, bool)) or v is None else str(v)
        doc.update({k: round(v, 3) for k, v in metrics.items()})
        line = json.dumps(doc, separators=(",", ":"))
        with _lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
        return doc
    except Exception:  # noqa: BLE001 - a metric must never fail the work it measures
        return {}


def recall_latency(ms: float, *, banks: int, candidates: int, retrieval: str) -> Mapping[str, Any]:
    """One recall: ``RecallMs`` and ``RecallCandidates``, with the retrieval mode that ran."""
    return emit("recall", {"RecallMs": ms, "RecallCandidates": candidates, "RecallBanks": banks},
                {"retrieval": retrieval})


def index_catch_up(ms: float, *, changes: int, source: str) -> Mapping[str, Any]:
    """A cache brought up to a bank's ``seq``: ``CatchUpMs``, ``CatchUpChanges``; ``source`` is
    ``revisions`` (the changes applied) or ``snapshot`` (a snapshot loaded: the ``seq`` it holds)."""
    return emit("index", {"CatchUpMs": ms, "CatchUpChanges": changes}, {"source": source})


def index_rebuild(ms: float, *, documents: int) -> Mapping[str, Any]:
    """A full index rebuild: ``RebuildMs``, ``RebuildDocuments`` and ``Rebuilds`` = 1."""
    return emit("index", {"RebuildMs": ms, "RebuildDocuments": documents, "Rebuilds": 1})
