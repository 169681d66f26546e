"""Every tuning value is finite and in range, and every container reports the same tuning state.

``w_bm25 = inf`` passed reload and recall answered ``"score": Infinity`` (no JSON);
``default_bank = "Bad Name!"`` passed; a warm container kept serving its cached tuning after the
file became invalid (``bm25-entity``, doctor: valid) while a cold one ran the last good tuning
(``bm25-entity+last-good-tuning``).
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib import tuning as tuning_mod
from chalicelib.errors import ConfigError
from chalicelib.storage import blobs
from tests.api.test_config_problems import _fresh_caches, cold_container  # noqa: F401 - the autouse fixture

NUMBERS = {k: f for k, f in tuning_mod.MemoryTuning.model_fields.items() if f.annotation in (int, float)}


def _strict(raw: bytes):
    """JSON as the standard has it: ``Infinity`` and ``NaN`` are errors."""
    def refuse(name):
        raise ValueError(f"not JSON: {name}")
    return json.loads(raw, parse_constant=refuse)


def _recall(client, token, query="green tea"):
    resp = client.http.post("/v1/banks/main/recall", headers={"Authorization": f"Bearer {token}",
                            "Content-Type": "application/json"}, body=json.dumps({"query": query}))
    assert resp.status_code == 200, resp.body
    return _strict(resp.body)


def _seed(api):
    for text in ("Alice prefers green tea in the morning", "Bob maintains the billing service"):
        assert api.post("/v1/banks/main/memories", {"text": text})[0] == 201


def _tuning_check(api):
    return {c["name"]: c for c in api.get("/v1/doctor")[1]["checks"]}["tuning"]


@pytest.mark.parametrize(("line", "key"), [("w_bm25 = inf", "memory.w_bm25"), ("w_entity = nan", "memory.w_entity"),
                                           ("w_time = 1e308", "memory.w_time"),
                                           ('default_bank = "Bad Name!"', "memory.default_bank")])
def test_a_value_out_of_range_is_refused_and_recall_stays_json(api, client, token, tmp_path, monkeypatch, line, key):
    _seed(api)
    f = tmp_path / "memory.toml"
    monkeypatch.setenv("CAIRN_CONFIG_FILE", str(f))
    f.write_text("[memory]\n" + line + "\n")
    status, body = api.post("/v1/reload")
    assert status == 400 and body["code"] == "invalid_config", body
    assert [p["key"] for p in body["details"]["problems"]] == [key]
    got = _recall(client, token)
    assert got["memories"] and got["retrieval"] == "bm25-entity+semantic+last-good-tuning"
    assert all(math.isfinite(h["score"]) for h in got["memories"])


def test_warm_and_cold_containers_report_the_same(api, client, token, tmp_path, monkeypatch):
    _seed(api)
    f = tmp_path / "memory.toml"
    monkeypatch.setenv("CAIRN_CONFIG_FILE", str(f))
    f.write_text("[memory]\nrecall_limit = 4\n")
    assert api.post("/v1/reload")[0] == 200
    assert _recall(client, token)["retrieval"] == "bm25-entity+semantic"  # warm, valid
    f.write_text("[memory]\nrecall_limit = 4\nw_bm25 = inf\n")  # edited under the running container
    warm = (_recall(client, token)["retrieval"], _tuning_check(api))
    cold_container()
    cold = (_recall(client, token)["retrieval"], _tuning_check(api))
    assert warm[0] == cold[0] == "bm25-entity+semantic+last-good-tuning"
    assert warm[1]["ok"] is cold[1]["ok"] is False
    assert "memory.w_bm25" in warm[1]["detail"] and "memory.w_bm25" in cold[1]["detail"]
    assert tuning_mod.get_tuning().recall_limit == 4  # the last good one runs


def test_an_invalid_bucket_edit_reaches_every_container(api, client, token):
    """Its event bumps the global version all the same (without a new last good tuning): every
    container re-reads the tuning and runs, and reports, the last good one."""
    from chalicelib.events.reload import reload_config
    from chalicelib.inject.reload import read_last_good, read_version
    _seed(api)
    blobs.put_text("config/memory.toml", "[memory]\nrecall_limit = 3\n")
    assert reload_config()["action"] == "config_reloaded"
    before, good = read_version(), read_last_good()
    assert _recall(client, token)["retrieval"] == "bm25-entity+semantic"
    blobs.put_text("config/memory.toml", "[memory]\nw_pinned = inf\n")
    result = reload_config()
    assert result["action"] == "config_invalid" and result["config_version"] == before + 1 == read_version()
    assert read_last_good() == good
    assert _recall(client, token)["retrieval"] == "bm25-entity+semantic+last-good-tuning"
    assert "memory.w_pinned" in _tuning_check(api)["detail"]


def _bad_values(name: str) -> list[str]:
    f = NUMBERS[name]
    top = next((m.le for m in f.metadata if getattr(m, "le", None) is not None), None)
    values = ["inf", "-inf", "nan", "-1", str(2**70)]
    if top is not None:
        values.append(str(top + 1))
    return values


@pytest.mark.parametrize("name", sorted(NUMBERS))
def test_every_number_is_finite_and_bounded(name):
    """The class: each numeric key, from the environment, refuses infinities, NaN, negatives and
    values past its bound, naming its variable."""
    for value in _bad_values(name):
        with pytest.raises(ConfigError) as err:
            tuning_mod.load_tuning(path="", env={f"CAIRN_MEMORY_{name.upper()}": value})
        assert err.value.problems[0]["key"] == f"CAIRN_MEMORY_{name.upper()}", (name, value)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(NUMBERS)),
                       st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2**80, 2**80)),
                       max_size=4))
def test_whatever_validates_is_finite_and_serialises_as_json(values):
    env = {f"CAIRN_MEMORY_{k.upper()}": repr(v) for k, v in values.items()}
    try:
        t = tuning_mod.load_tuning(path="", env=env)
    except ConfigError:
        return
    json.dumps(t.model_dump(), allow_nan=False)
    assert all(math.isfinite(getattr(t, k)) for k in NUMBERS)
