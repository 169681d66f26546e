"""Memory tuning and the analyzers as units."""

from __future__ import annotations

import pytest

from chalicelib.errors import ConfigError
from chalicelib.tuning import MemoryTuning, get_tuning, load_tuning, set_config_version


def test_defaults():
    t = load_tuning(path="", env={})
    assert t == MemoryTuning()
    assert (t.fetch_limit, t.recall_limit, t.decay_half_life_days, t.default_bank) == (50, 6, 30, "main")
    # entity and recency floor tuned on LoCoMo
    assert (t.w_bm25, t.w_entity, t.w_corroboration, t.w_pinned, t.recency_floor) == (1.0, 1.5, 0.3, 0.75, 0.9)


def test_toml_then_env_override(tmp_path):
    f = tmp_path / "cairn.toml"
    f.write_text("[memory]\nfetch_limit = 80\nnudges = false\nw_entity = 0.9\n")
    t = load_tuning(path=str(f), env={"CAIRN_MEMORY_FETCH_LIMIT": "120", "CAIRN_MEMORY_DEFAULT_BANK": "work"})
    assert (t.fetch_limit, t.nudges, t.w_entity, t.default_bank) == (120, False, 0.9, "work")


def test_unknown_key_is_named(tmp_path):
    f = tmp_path / "cairn.toml"
    f.write_text("[memory]\nfetch_limt = 80\n")
    with pytest.raises(ConfigError, match="fetch_limt"):
        load_tuning(path=str(f), env={})
    with pytest.raises(ConfigError, match="CAIRN_MEMORY_BOGUS"):
        load_tuning(path="", env={"CAIRN_MEMORY_BOGUS": "1"})


def test_bad_value_is_named(tmp_path):
    with pytest.raises(ConfigError, match="CAIRN_MEMORY_FETCH_LIMIT"):
        load_tuning(path="", env={"CAIRN_MEMORY_FETCH_LIMIT": "lots"})
    f = tmp_path / "cairn.toml"
    f.write_text("[memory]\nrecall_limit = 0\n")
    with pytest.raises(ConfigError, match=r"memory.recall_limit"):
        load_tuning(path=str(f), env={})
    with pytest.raises(ConfigError, match="not found"):
        load_tuning(path=str(tmp_path / "missing.toml"), env={})


def test_get_tuning_cached_per_config_version(tmp_path, monkeypatch):
    f = tmp_path / "cairn.toml"
    f.write_text("[memory]\nfetch_limit = 70\n")
    monkeypatch.setenv("CAIRN_CONFIG_FILE", str(f))
    set_config_version(0)
    assert get_tuning().fetch_limit == 70
    f.write_text("[memory]\nfetch_limit = 90\n")
    assert get_tuning().fetch_limit == 90  # an edited file is re-read at once, as a cold container would
    assert set_config_version(1) is True
    assert get_tuning().fetch_limit == 90
    assert set_config_version(1) is False
    monkeypatch.setenv("CAIRN_MEMORY_FETCH_LIMIT", "33")  # a changed environment is seen at once
    assert get_tuning().fetch_limit == 33
    set_config_version(0)


def test_analyzers():
    from chalicelib.search.analyzers import cjk_analyzer, entity_keys, first_person, memory_analyzer, query_terms
    ma = memory_analyzer()
    assert query_terms(ma, "Café RÉSUMÉ") == ["cafe", "resum"]
    assert query_terms(ma, "os.path.join") == ["os.path.join", "os", "path", "join"]
    assert query_terms(ma, "getUserName") == ["getusernam", "get", "user", "name"]
    assert query_terms(ma, "the and of") == []
    assert query_terms(ma, "what? *") == []
    assert query_terms(cjk_analyzer(), "天気") == ["天気"]
    assert "天気" in query_terms(cjk_analyzer(), "東京都の天気は晴れです")
    assert query_terms(cjk_analyzer(), "雨") == ["雨"]
    assert query_terms(ma, "東京") == []  # CJK lives in its own field
    assert first_person("Where do I live?") and first_person("MY car") and not first_person("Imagine")
    assert "user" in entity_keys("remind me") and "user" not in entity_keys("remind them")
    assert "alice smith" in entity_keys("Did Alice Smith call?")
