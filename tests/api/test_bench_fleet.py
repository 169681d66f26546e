"""bench.fleet: the simulation's GDSF evicts as the real ``IndexCache`` does, bank for bank."""

from __future__ import annotations

from bench import fleet


def test_the_simulated_gdsf_keeps_what_the_index_cache_keeps(tmp_path):
    # accounted bytes per bank size as bench.fleet measures them (the cache's budget figure)
    model = fleet.CostModel([100, 1000, 10000], {"accounted_bytes": [300_001.0, 2_300_001.0, 20_000_001.0],
                                                 "snapshot_bytes": [1e5, 1e6, 1e7], "cold_cairn_ms": [5.0, 20.0, 200.0],
                                                 "warm_p50_ms": [1.0, 2.0, 5.0]})
    assert fleet.crosscheck(model, 64, str(tmp_path), recalls=3000) == 3000
