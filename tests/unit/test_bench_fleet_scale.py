"""bench.fleet_scale: the one table of every fleet-scale figure, its targets and a failed piece."""

from __future__ import annotations

from bench import fleet_scale

OPTIONS = {"sizes": [100000], "fanout_banks": [1, 50], "fanout_size": 1000, "replay_writes": 10000,
           "cache_banks": 20, "startup_repeat": 5, "fleet_recalls": None}


def _piece(data: dict) -> dict:
    return {"data": data, "wall_s": 1.0, "loadavg": [1.0, 1.0]}


def _out() -> dict:
    kinds = {"selective": {"p50_ms": 0.2}, "common": {"p50_ms": 3.0}}
    return {"options": OPTIONS, "wall_s": 60.0, "pieces": {
        "startup": _piece({"checkout": {"import_app_ms": 390.0, "third_party_ms": 320.0, "ratio": 1.22,
                                        "cpu_ratio": 1.2}}),
        "fanout": _piece({"size": 1000, "banks": {"1": {"p50_ms": 5.0, "p95_ms": 6.0},
                                                  "50": {"p50_ms": 20.0, "p95_ms": 30.0}}}),
        "replay": _piece({"error": "RuntimeError: moto went away"}),
        "ranking": _piece({"100000": {"ranking": kinds, "scoring": kinds,
                                      "bm25s": {"selective": {"p50_ms": 0.4}, "common": {"p50_ms": 1.0},
                                                "bytes": 10_000_000},
                                      "tantivy": None,
                                      "index": {"lexical": 25_000_000, "vectors": 4_000_000, "segments": 4}}}),
        "cache": _piece({"banks": 20, "size": 1000, "accounted_median": 900, "rss_growth_median": 1000,
                         "accounted_over_rss": 0.9}),
        "fleet": _piece({"error": "skipped"}),
    }}


def _rows(md: list[str], start: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in md if line.startswith(f"| {start}")]


def test_each_figure_stands_beside_its_reference_and_target():
    md = fleet_scale.markdown(_out())
    fanout = _rows(md, "recall across 50")
    assert fanout[0][1] == "20.0 / 30.0 (4.0x)" and fanout[0][-1] == "no"  # 4x one bank, target 3x
    assert _rows(md, "recall across 1 ")[0][-1] == ""  # one bank is the reference, no target
    selective, common = _rows(md, "selective ranking"), _rows(md, "common ranking")
    assert selective[0][2].startswith("0.4 (0.50x") and selective[0][3] == "not installed" and selective[0][-1] == "yes"
    assert common[0][2].startswith("1.0 (3.00x") and common[0][-1] == "no"
    index = _rows(md, "index bytes")[0]
    assert index[1] == "25,000,000 (4,000,000; 4)" and index[2] == "10,000,000 (2.50x)" and index[-1] == "no"
    assert _rows(md, "cache accounting")[0][-1] == "yes"  # 0.9: within 20%
    assert _rows(md, "import app (checkout)")[0][-1] == "yes"
    assert "run make package first" in _rows(md, "package")[0][1]


def test_a_failed_piece_is_a_row_and_the_others_still_report():
    md = fleet_scale.markdown(_out())
    failed = _rows(md, "replay: failed")
    assert failed and "moto went away" in failed[0][1]
    assert _rows(md, "fleet: failed")
    assert not any(line.startswith("### Fleet simulation") for line in md)
    assert [r[0] for r in _rows(md, "")][-6:] == list(fleet_scale.PIECES)  # every piece's wall time
