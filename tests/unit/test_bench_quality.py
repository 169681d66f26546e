"""The LoCoMo benchmark's tuning never sees the evaluation conversations, and its time handling
(own dates, session ids, recall as of the last turn). No LoCoMo data needed: a small sample in
the LoCoMo format is written to a temporary file."""

from __future__ import annotations

import json

from bench import locomo, quality
from chalicelib.tuning import MemoryTuning


def _sample(sample_id: str) -> dict:
    return {"sample_id": sample_id,
            "conversation": {"session_1_date_time": "1:56 pm on 8 May, 2023",
                             "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": f"{sample_id} hello"},
                                           {"speaker": "Bob", "dia_id": "D1:2", "text": f"{sample_id} hi"}],
                             "session_2_date_time": "10:00 am on 25 May, 2023",
                             "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": f"{sample_id} again"}]},
            "qa": [{"question": "when did Ann say hello?", "category": cat, "evidence": ["D1:1"]} for cat in (1, 5)]}


def test_the_search_ranks_the_tuning_conversations_only(tmp_path):
    ids = [*locomo.TUNE, "conv-eval-a", "conv-eval-b"]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([_sample(s) for s in ids]))
    convs = locomo.load(path)
    assert {c.sample_id for c in convs} == set(ids)
    asked: list[str] = []

    def cairn(_tuning) -> dict[str, locomo.Ranker]:
        def ranker(sample_id: str) -> locomo.Ranker:
            def rank(_q: str) -> list[int]:
                asked.append(sample_id)
                return [0]
            return rank
        return {c.sample_id: ranker(c.sample_id) for c in convs}

    rows = quality.search(quality.tune_split(convs), cairn, MemoryTuning())
    assert rows and set(asked) == set(locomo.TUNE)


def test_a_conversation_keeps_its_dates_and_sessions(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([_sample("conv-26")]))
    conv = locomo.load(path)[0]
    may8 = locomo.parse_date("1:56 pm on 8 May, 2023")
    assert conv.times == [may8, may8 + locomo.TURN_MS, locomo.parse_date("10:00 am on 25 May, 2023")]
    assert conv.sessions == ["conv-26/s1", "conv-26/s1", "conv-26/s2"]
    assert conv.now == conv.times[-1]
