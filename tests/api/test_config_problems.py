"""Configuration cannot take the service down: an invalid memory tuning keeps the last good one
(persisted for cold containers), reload refuses it naming the file, key and problem, doctor
reports it; an invalid infrastructure setting fails with 500 ``misconfigured`` naming the
variable."""

from __future__ import annotations

import pytest

from chalicelib import tuning as tuning_mod
from chalicelib.storage import blobs

BAD_TOML = "[memory]\nrecall_limit = 0\n"


@pytest.fixture(autouse=True)
def _fresh_caches(aws):
    from chalicelib.inject import rules_cache
    from chalicelib.search import index
    rules_cache.drop()
    tuning_mod.set_config_version(0)
    tuning_mod.get_tuning.cache_clear()
    index.reset_default()
    yield
    rules_cache.drop()
    tuning_mod.set_config_version(0)
    tuning_mod.get_tuning.cache_clear()
    tuning_mod._last_good = None


def cold_container():
    """Forget everything this process holds, as a new Lambda container would."""
    from chalicelib.search import index
    tuning_mod.get_tuning.cache_clear()
    tuning_mod._last_good = None
    index.reset_default()


def seed(api):
    for text in ("Alice prefers green tea in the morning", "Bob maintains the billing service",
                 "The deploy pipeline runs on Fridays"):
        assert api.post("/v1/banks/main/memories", {"text": text})[0] == 201
    assert api.put("/v1/banks/main/rules/style", {"content": "Answer briefly."})[0] == 200
    status, body = api.post("/v1/api/memories", {"name": "tea", "content": "Alice drinks green tea",
                                                 "description": "tea preference"})
    assert status == 201, body


def hook(api, text="what tea does alice drink?"):
    return api.post("/v1/hooks/pre-generate", {"messages": [{"role": "user", "content": text}]})


def test_reload_refuses_an_invalid_bucket_tuning_naming_file_key_and_problem(api):
    from chalicelib.inject.reload import read_version
    blobs.put_text("config/memory.toml", BAD_TOML)
    status, body = api.post("/v1/reload")
    assert status == 400 and body["code"] == "invalid_config", body
    assert "config/memory.toml" in body["error"] and "memory.recall_limit" in body["error"]
    assert body["details"]["problems"] == [{"source": "s3 config/memory.toml", "key": "memory.recall_limit",
                                            "problem": "Input should be greater than or equal to 1"}]
    assert read_version() == 0  # nothing bumped
    blobs.put_text("config/memory.toml", "[memory\n")
    status, body = api.post("/v1/reload")
    assert status == 400 and body["code"] == "invalid_config" and "not valid TOML" in body["error"]


def test_reload_refuses_an_invalid_environment_tuning(api, monkeypatch):
    monkeypatch.setenv("CAIRN_MEMORY_FETCH_LIMIT", "lots")
    status, body = api.post("/v1/reload")
    assert status == 400 and body["code"] == "invalid_config"
    assert body["details"]["problems"][0]["key"] == "CAIRN_MEMORY_FETCH_LIMIT"


def test_invalid_bucket_tuning_after_a_cold_start_keeps_the_last_good_one(api):
    """The reproduced defect: the object is refused by its reload event but stays in the bucket;
    the next reload or cold start read it and recall, the hook and structured search answered
    500 "The service is misconfigured." Now the last good tuning (persisted in the config row)
    runs and the retrieval mode says so."""
    seed(api)
    blobs.put_text("config/memory.toml", "[memory]\nrecall_limit = 2\n")
    assert api.post("/v1/reload")[0] == 200
    status, body = api.post("/v1/banks/main/preview", {"query": "tea"})
    assert status == 200 and body["retrieval"] == "bm25-entity+semantic"
    blobs.put_text("config/memory.toml", BAD_TOML)  # a hand edit; its event is refused
    cold_container()
    assert tuning_mod.get_tuning().recall_limit == 2  # the persisted last good, not the defaults
    assert "memory.recall_limit" in str(tuning_mod.tuning_problem())
    status, body = api.post("/v1/banks/main/preview", {"query": "green tea"})
    assert status == 200 and body["retrieval"] == "bm25-entity+semantic+last-good-tuning"
    assert body["memories"][0]["memory"]["text"] == "Alice prefers green tea in the morning"
    status, body = hook(api)
    assert status == 200 and body["retrieval"] == "bm25-entity+semantic+last-good-tuning"
    assert "green tea" in body["mutations"]["append_messages"][0]["content"]
    assert "Answer briefly." in body["mutations"]["system_prompt_append"]
    status, body = api.post("/v1/banks/main/recall", {"query": "green tea"})
    assert status == 200 and body["memories"] and body["retrieval"] == "bm25-entity+semantic+last-good-tuning"
    status, body = api.post("/v1/api/memories/search", {"query": "green tea"})
    assert status == 200, body
    # doctor names the problem without failing: the service runs on the last good tuning
    status, body = api.get("/v1/doctor")
    checks = {c["name"]: c for c in body["checks"]}
    assert checks["tuning"]["ok"] is False and checks["tuning"]["required"] is False
    assert "memory.recall_limit" in checks["tuning"]["detail"] and "last good" in checks["tuning"]["detail"]
    # fixing the object and reloading runs the configured tuning again
    blobs.put_text("config/memory.toml", "[memory]\nrecall_limit = 3\n")
    assert api.post("/v1/reload")[0] == 200
    assert tuning_mod.get_tuning().recall_limit == 3 and tuning_mod.tuning_problem() is None
    assert hook(api)[1]["retrieval"] == "bm25-entity+semantic"


def test_invalid_environment_tuning_never_fails_the_hook(api, monkeypatch):
    seed(api)
    monkeypatch.setenv("CAIRN_MEMORY_RECALL_LIMIT", "-1")
    status, body = hook(api)
    assert status == 200 and body["retrieval"] == "bm25-entity+semantic+last-good-tuning"
    assert body["mutations"]["append_messages"]


def test_cold_container_with_no_last_good_runs_the_defaults(api, monkeypatch):
    monkeypatch.setenv("CAIRN_MEMORY_NO_SUCH_KEY", "1")
    cold_container()
    assert tuning_mod.get_tuning() == tuning_mod.MemoryTuning()
    assert "CAIRN_MEMORY_NO_SUCH_KEY" in str(tuning_mod.tuning_problem())


def test_invalid_infrastructure_setting_is_500_misconfigured_naming_the_variable(api, monkeypatch):
    monkeypatch.setenv("CAIRN_MAX_BODY_BYTES", "five")
    status, body = api.get("/v1/banks")
    assert status == 500 and body["code"] == "misconfigured"
    assert "CAIRN_MAX_BODY_BYTES" in body["error"]
    assert body["details"]["problems"][0]["key"] == "CAIRN_MAX_BODY_BYTES"


def test_doctor_fails_on_an_invalid_team_limit_naming_it(api, monkeypatch):
    """The reproduced defect: an invalid KEYSTONE_* limit left doctor ``ok: true`` while every
    team write answered 500."""
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")
    monkeypatch.setenv("KEYSTONE_CONTEXT_MEMORY_COMPACT_AFTER", "0")
    status, body = api.get("/v1/doctor")
    assert status == 200 and body["ok"] is False
    checks = {c["name"]: c for c in body["checks"]}
    assert checks["configuration"]["ok"] is False and checks["configuration"]["required"] is True
    assert "KEYSTONE_CONTEXT_MEMORY_COMPACT_AFTER" in checks["configuration"]["detail"]


def test_local_stack_refuses_to_start_on_an_invalid_setting(monkeypatch, tmp_path):
    """``make run`` checks the settings up front instead of starting a stack that answers 500."""
    from infra.local import preflight
    from infra.local.stack import Stack
    monkeypatch.setenv("KEYSTONE_CONTEXT_MEMORY_MAX_UNITS", "none")
    monkeypatch.setenv("CAIRN_MEMORY_FETCH_LIMIT", "lots")
    errors, warnings = preflight.problems()
    assert len(errors) == 1 and "KEYSTONE_CONTEXT_MEMORY_MAX_UNITS" in errors[0]
    assert len(warnings) == 1 and "CAIRN_MEMORY_FETCH_LIMIT" in warnings[0]
    stack = Stack(port=1, moto_port=2, state_dir=tmp_path, fresh=True, dev_token=None)
    with pytest.raises(SystemExit, match="KEYSTONE_CONTEXT_MEMORY_MAX_UNITS"):
        stack.start()
    assert not any(tmp_path.iterdir())  # nothing started, nothing written
    monkeypatch.delenv("KEYSTONE_CONTEXT_MEMORY_MAX_UNITS")
    assert preflight.problems()[0] == []


@pytest.mark.parametrize("value,level", [("WARNING", "WARNING"), ("DEBUG", "DEBUG"), ("loud", "INFO")])
def test_log_level_comes_from_settings(monkeypatch, value, level):
    """``configure_logging`` reads ``Settings.log_level``; an invalid value logs at INFO (the
    first request reports it as 500 ``misconfigured``)."""
    import logging

    from chalicelib.logs import configure_logging
    monkeypatch.setenv("CAIRN_LOG_LEVEL", value)
    try:
        configure_logging()
        assert logging.getLevelName(logging.getLogger("cairn").level) == level
    finally:
        monkeypatch.delenv("CAIRN_LOG_LEVEL")
        configure_logging()


def test_settings_override_is_scoped_and_checked():
    from chalicelib.errors import ConfigError
    from chalicelib.settings import get_settings, override
    default = get_settings().export_inline_bytes
    with override(export_inline_bytes=7):
        assert get_settings().export_inline_bytes == 7
    assert get_settings().export_inline_bytes == default
    with pytest.raises(ConfigError), override(no_such_setting=1):
        pass
