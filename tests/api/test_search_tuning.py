"""Memory tuning read from the bucket's config object, over in-process moto."""

from __future__ import annotations


def test_bucket_config_object_layers_over_the_file_under_the_environment(aws, tmp_path, monkeypatch):
    """A hand-edited ``config/memory.toml`` in the bucket changes the tuning of
    every container after its reload event; the environment still wins; an invalid object is
    refused and the running tuning stays."""
    from chalicelib.events.reload import reload_config
    from chalicelib.storage import blobs
    from chalicelib.tuning import get_tuning
    f = tmp_path / "memory.toml"
    f.write_text("[memory]\nfetch_limit = 60\nrecall_limit = 4\n")
    monkeypatch.setenv("CAIRN_CONFIG_FILE", str(f))
    assert (get_tuning().fetch_limit, get_tuning().recall_limit) == (60, 4)
    blobs.put_text("config/memory.toml", "[memory]\nfetch_limit = 77\n")
    assert reload_config()["action"] == "config_reloaded"
    assert (get_tuning().fetch_limit, get_tuning().recall_limit) == (77, 4)
    monkeypatch.setenv("CAIRN_MEMORY_FETCH_LIMIT", "90")
    assert get_tuning().fetch_limit == 90
    monkeypatch.delenv("CAIRN_MEMORY_FETCH_LIMIT")
    blobs.put_text("config/memory.toml", "[memory]\nno_such_key = 1\n")
    assert reload_config()["action"] == "config_invalid"
    assert get_tuning().fetch_limit == 77
