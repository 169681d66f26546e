"""The command-line tool against in-process moto (``--stage dev`` with the
``aws`` fixture's CAIRN_* names in the environment)."""

from __future__ import annotations

import io
import json

import pytest

from chalicelib import cli
from chalicelib.fingerprint import fingerprint


def run(*argv, stdin=None):
    """``(status, stdout, stderr)`` of one CLI call."""
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(["--stage", "dev", *argv], out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def test_local_stage_points_at_the_local_stack(tmp_path, monkeypatch):
    """``--stage local`` talked to moto on 5005 unless CAIRN_MOTO_PORT was exported, so with a
    stack on other ports it could write into another process's moto. It reads the running
    stack's ports from the state directory, or refuses."""
    from infra.local import runfile
    from infra.local.resources import names
    env = {"CAIRN_STATE_DIR": str(tmp_path)}
    with pytest.raises(cli.UsageError, match="no local stack is running"):
        cli.stage_environment("local", env)
    runfile.write(tmp_path, port=8123, moto_port=6124)  # this process stands in for a launcher
    local = cli.stage_environment("local", env)
    assert local["AWS_ENDPOINT_URL"] == "http://127.0.0.1:6124"
    assert local["CAIRN_TABLE_PREFIX"] == "cairn-local-"
    assert local["CAIRN_BUCKET"] == names("cairn-local")["CAIRN_BUCKET"]
    assert cli.stage_environment("local", {**env, "CAIRN_MOTO_PORT": "6123"})["AWS_ENDPOINT_URL"] == \
        "http://127.0.0.1:6123"  # an explicit port wins
    (tmp_path / runfile.RUN_FILE).write_text('{"pid": 999999999, "port": 1, "moto_port": 2}')
    with pytest.raises(cli.UsageError):  # left by a killed stack: its process is gone
        cli.stage_environment("local", env)
    monkeypatch.delenv("CAIRN_MOTO_PORT", raising=False)
    monkeypatch.setenv("CAIRN_STATE_DIR", str(tmp_path))
    status = cli.main(["--stage", "local", "export", "--org", "o", "--bank", "b"], out=io.StringIO(),
                      err=(err := io.StringIO()))
    assert status == 2 and "no local stack is running" in err.getvalue()


def test_mint_token_creates_an_org(aws, client):
    status, out, _ = run("mint-token", "--org", "acme", "--kind", "person", "--user-id", "ops",
                         "--permissions", "memory:read,memory:write", "--label", "first")
    assert status == 0
    minted = json.loads(out)
    assert minted["permissions"] == ["memory:read", "memory:write"] and minted["label"] == "first"
    from chalicelib.auth.tokens import authenticate
    principal = authenticate(f"Bearer {minted['token']}")
    assert principal.org_id == "acme" and principal.user_id == "ops"
    # The new org's token works over the API and sees its own (empty) org.
    headers = {"Authorization": f"Bearer {minted['token']}", "Content-Type": "application/json"}
    assert client.http.post("/v1/banks", headers=headers, body=json.dumps({"name": "notes"})).status_code == 201
    assert json.loads(client.http.get("/v1/banks", headers=headers).body)["banks"][0]["name"] == "notes"

    status, out, _ = run("mint-token", "--org", "acme", "--kind", "service", "--user-id", "svc", "--permissions", "all")
    assert status == 0 and "admin.tokens" in json.loads(out)["permissions"]


def test_mint_token_rejects_bad_input(aws):
    status, _, err = run("mint-token", "--org", "acme", "--kind", "person", "--user-id", "u",
                         "--permissions", "memory:read,fly")
    assert status == 2 and "fly" in err
    status, _, err = run("mint-token", "--org", "acme", "--kind", "person", "--permissions", "memory:read")
    assert status == 1 and "user_id" in err
    from chalicelib.storage.tables import TokenModel
    assert [t for t in TokenModel.scan() if t.org_id == "acme"] == []


def test_export_then_import_round_trip(aws, api, tmp_path):
    texts = ["The build uses make", "Deploys happen on Fridays", "Reviews need two people"]
    for t in texts:
        assert api.post("/v1/banks/src/memories", {"text": t, "tags": ["team"]})[0] == 201
    api.patch(f"/v1/banks/src/memories/{fingerprint(texts[0])}", {"pinned": True})

    path = tmp_path / "memories.jsonl"
    status, _, err = run("export", "--org", "default", "--bank", "src", "-o", str(path))
    assert status == 0 and "3 records" in err
    lines = path.read_text().splitlines()
    assert sorted(json.loads(x)["text"] for x in lines) == sorted(texts)
    status, out, _ = run("export", "--org", "default", "--bank", "src", "--history")
    assert status == 0 and [json.loads(x)["op"] for x in out.splitlines()] == ["create"] * 3 + ["update"]
    assert len(out.splitlines()) == 4

    lines.insert(1, '{"text": "no"}')  # too short: reported by line number, skipped
    path.write_text("\n".join(lines) + "\n")
    status, out, err = run("import", "--org", "default", "--bank", "dst", str(path))
    result = json.loads(out)
    assert status == 1
    assert result["imported"] == 3 and result["skipped"] == 0 and [e["line"] for e in result["errors"]] == [2]
    code, body = api.get(f"/v1/banks/dst/memories/{fingerprint(texts[0])}")
    assert code == 200 and body["memory"]["pinned"] is True and body["memory"]["revision"] == 1

    status, out, _ = run("import", "--org", "default", "--bank", "dst", str(path))
    assert json.loads(out)["imported"] == 0 and json.loads(out)["skipped"] == 3


def test_export_of_a_missing_bank_fails(aws):
    status, out, err = run("export", "--org", "default", "--bank", "nope")
    assert status == 1 and out == "" and "bank_not_found" in err


def test_import_of_a_missing_file_is_a_usage_error(aws, tmp_path):
    status, _, err = run("import", "--org", "default", "--bank", "b", str(tmp_path / "missing.jsonl"))
    assert status == 2 and "cannot read" in err


def test_rebuild_indexes(aws, api):
    pytest.importorskip("chalicelib.search.recall")
    for t in ("Alpha memory for the index", "Beta memory for the index"):
        api.post("/v1/banks/idx/memories", {"text": t})
    api.post("/v1/banks/other/memories", {"text": "Gamma memory elsewhere"})
    status, out, _ = run("rebuild-indexes", "--org", "default", "--bank", "idx")
    assert status == 0
    (line,) = [json.loads(x) for x in out.splitlines()]
    assert line["org"] == "default" and line["bank"] == "idx" and line["documents"] == 2
    status, out, _ = run("rebuild-indexes", "--org", "default")
    assert status == 0 and sorted(json.loads(x)["bank"] for x in out.splitlines()) == ["idx", "other"]
    status, _, err = run("rebuild-indexes", "--bank", "idx")
    assert status == 2 and "--org" in err


def test_export_is_inline_whatever_the_configured_cap_and_leaves_the_environment(aws, api, monkeypatch):
    """The CLI overrides ``export_inline_bytes`` through ``settings.override``: a bank over the
    configured inline cap is still written to stdout, and no CAIRN_* variable is changed."""
    import os

    from chalicelib.settings import get_settings
    assert api.post("/v1/banks/big/memories", {"text": "A memory longer than the tiny inline cap."})[0] == 201
    monkeypatch.setenv("CAIRN_EXPORT_INLINE_BYTES", "1")
    before = dict(os.environ)
    status, out, _ = run("export", "--org", "default", "--bank", "big")
    assert status == 0 and json.loads(out.splitlines()[0])["text"] == "A memory longer than the tiny inline cap."
    assert os.environ.get("CAIRN_EXPORT_INLINE_BYTES") == "1" and dict(os.environ) == before
    assert get_settings().export_inline_bytes == 1


def test_rebuild_metric_lines_go_to_stderr_not_the_commands_output(aws, api, capsys):
    """With ``--metrics`` (without it they are dropped: test_cli_operator.py)."""
    api.post("/v1/banks/idx/memories", {"text": "Alpha memory for the index"})
    capsys.readouterr()
    status, out, err = run("--metrics", "rebuild-indexes", "--org", "default", "--bank", "idx")
    assert status == 0 and [json.loads(x)["bank"] for x in out.splitlines()] == ["idx"]
    metrics = [json.loads(x) for x in err.splitlines() if x.startswith("{")]
    rebuilt = [m["Event"] for m in metrics if "RebuildMs" in m]
    assert rebuilt and set(rebuilt) == {"index"}
    assert "RebuildMs" not in capsys.readouterr().out
