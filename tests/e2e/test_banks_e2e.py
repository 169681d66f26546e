"""Every bank route and the token admin API, over real HTTP against
the local stack that ``make run`` starts (chalice local + moto server)."""

from __future__ import annotations

import json
import uuid

import requests

from chalicelib.fingerprint import fingerprint


def _bank() -> str:
    return "e2e-" + uuid.uuid4().hex[:10]


def _listed(http) -> list[str]:
    """Every live bank's name, page after page."""
    names, params = [], {"limit": "200"}
    while True:
        body = http.get("/v1/banks", params=params).json()
        names += [b["name"] for b in body["banks"]]
        if "next_cursor" not in body:
            return names
        params = {"limit": "200", "cursor": body["next_cursor"]}


def test_unknown_route_is_404_and_wrong_method_is_405(http):
    r = http.get("/v1/no-such-route")
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    r = http.put("/v1/banks", json={})
    assert r.status_code == 405 and r.json()["code"] == "method_not_allowed"
    r = http.get("/v1/banks", token=None)
    assert r.status_code == 401 and r.json()["code"] == "unauthorized"
    r = http.get("/v1/health", token=None)
    assert (r.status_code, r.json(), r.headers["Cache-Control"]) == (200, {"status": "ok"}, "no-store")


def test_bank_create_list_trash_restore(http):
    name = _bank()
    r = http.post("/v1/banks", json={"name": name, "description": "e2e"})
    assert r.status_code == 201, r.text
    assert r.json() == {"bank": {"name": name, "description": "e2e", "memories": 0, "pinned": 0, "rules": 0,
                                 "settings": {"on_conflict": "flag", "match_threshold": None,
                                              "ambient_floor": None, "feed": None},
                                 "defaults": {"match_threshold": 0.35, "ambient_floor": True}}, "created": True}
    r = http.post("/v1/banks", json={"name": name})
    assert r.status_code == 200 and r.json()["created"] is False
    assert http.get(f"/v1/banks/{name}").json()["bank"]["name"] == name
    assert name in _listed(http)

    assert http.put(f"/v1/banks/{name}/rules/style", json={"content": "# Style\nBe brief."}).json() == {"exists": True}
    saved = http.post(f"/v1/banks/{name}/memories", json={"text": "The deploy runs on Fridays"}).json()["memory"]
    http.patch(f"/v1/banks/{name}/memories/{saved['id']}", json={"text": "The deploy runs on Thursdays"})

    r = http.delete(f"/v1/banks/{name}")
    assert r.status_code == 200
    trashed_to = r.json()["trashed_to"]
    assert name not in _listed(http)
    trash = http.get("/v1/banks", params={"trashed": "true"}).json()["banks"]
    assert {"name": name, "trashed_to": trashed_to} in [{k: t[k] for k in ("name", "trashed_to")} for t in trash]
    assert http.get(f"/v1/banks/{name}/memories").json()["code"] == "bank_not_found"

    # A new bank of the same name never mixes with the trashed one; restoring over it is 409.
    http.post(f"/v1/banks/{name}/memories", json={"text": "A different bank entirely"})
    r = http.post(f"/v1/banks/{name}/restore", json={"trashed_to": trashed_to})
    assert r.status_code == 409 and r.json()["code"] == "bank_exists"
    second = http.delete(f"/v1/banks/{name}").json()["trashed_to"]
    assert second != trashed_to

    r = http.post(f"/v1/banks/{name}/restore", json={"trashed_to": trashed_to})
    assert r.status_code == 200, r.text
    assert r.json()["bank"]["memories"] == 1 and r.json()["bank"]["rules"] == 1
    mems = http.get(f"/v1/banks/{name}/memories").json()["memories"]
    assert [m["text"] for m in mems] == ["The deploy runs on Thursdays"]
    revs = http.get(f"/v1/banks/{name}/memories/{saved['id']}/history").json()["revisions"]
    assert [rv["text"] for rv in revs] == ["The deploy runs on Fridays", "The deploy runs on Thursdays"]
    rules = http.get(f"/v1/banks/{name}/rules").json()["rules"]
    assert [(x["name"], x["content"]) for x in rules] == [("style", "# Style\nBe brief.")]


def test_rules_put_list_remove(http):
    name = _bank()
    assert http.put(f"/v1/banks/{name}/rules/tone", json={"content": "Answer in English."}).json() == {"exists": True}
    assert http.put(f"/v1/banks/{name}/rules/tone", json={"content": "Answer in French."}).json() == {"exists": True}
    rules = http.get(f"/v1/banks/{name}/rules").json()["rules"]
    assert [(x["name"], x["content"]) for x in rules] == [("tone", "Answer in French.")]
    assert isinstance(rules[0]["updated_at"], int)
    assert http.put(f"/v1/banks/{name}/rules/tone", json={"content": "  \n"}).json() == {"exists": False}
    assert http.get(f"/v1/banks/{name}/rules").json()["rules"] == []
    r = http.put(f"/v1/banks/{name}/rules/%2E%2E%2Fevil", json={"content": "x"})
    assert r.status_code == 400 and r.json()["code"] == "invalid_name"


def test_memory_routes(http):
    name = _bank()
    base = f"/v1/banks/{name}/memories"
    r = http.post(base, json={"text": "User prefers  short   names", "tags": ["Style"], "entities": ["User"]})
    assert r.status_code == 201, r.text
    mem = r.json()["memory"]
    assert mem["id"] == "fp37dab55090b26303" and mem["corroboration"] == 0 and mem["tags"] == ["style"]

    r = http.post(base, json={"text": "user prefers short names", "tags": ["naming"]})
    assert r.status_code == 200 and r.json()["created"] is False
    assert r.json()["memory"]["corroboration"] == 1 and r.json()["memory"]["tags"] == ["style", "naming"]
    assert r.json()["memory"]["text"] == "User prefers  short   names"  # the stored text stays

    # distinct words, not numbers: texts differing only by a number are a detected conflict (linked)
    texts = [f"Fact about the {w} build" for w in ("apple", "birch", "cedar", "daisy", "elm")]
    ids = [http.post(base, json={"text": t, "tags": ["build"]}).json()["memory"]["id"] for t in texts]
    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = http.get(base, params=params).json()
        assert page["total"] == 6 and len(page["memories"]) <= 2
        seen += [m["id"] for m in page["memories"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert sorted(seen) == sorted([*ids, mem["id"]]) and len(seen) == 6
    assert {m["id"] for m in http.get(base, params={"tag": "build"}).json()["memories"]} == set(ids)

    one = f"{base}/{ids[0]}"
    assert http.get(one).json()["memory"]["text"] == texts[0]
    r = http.patch(one, json={"text": "Fact about the apple build, written again", "tags": ["build", "ci"]})
    assert r.status_code == 200, r.text
    assert r.json()["memory"]["id"] == ids[0] and r.json()["memory"]["revision"] == 1
    assert http.post(f"{one}/pin", json={"pinned": True}).json()["memory"]["pinned"] is True
    tags = http.get(f"/v1/banks/{name}/tags").json()["tags"]
    assert tags[0] == {"tag": "build", "count": 5} and {"tag": "ci", "count": 1} in tags

    r = http.post(f"{base}/{ids[1]}/supersede", json={"superseded_by": ids[2]})
    assert r.status_code == 200 and r.json()["memory"]["superseded_by"] == ids[2]
    r = http.post(f"{base}/{ids[1]}/pin", json={"pinned": True})
    assert r.status_code == 409 and r.json()["code"] == "memory_retired"
    r = http.delete(f"{base}/{ids[3]}")
    assert r.status_code == 200 and r.json()["memory"]["invalid_at"]
    live = {m["id"] for m in http.get(base).json()["memories"]}
    assert ids[1] not in live and ids[3] not in live and ids[0] in live
    assert ids[1] in {m["id"] for m in http.get(base, params={"include_superseded": "true"}).json()["memories"]}

    revs = http.get(f"{one}/history").json()["revisions"]
    assert [rv["revision"] for rv in revs] == [0, 1, 2]
    assert revs[0]["text"] == texts[0]

    r = http.post(f"{base}/{ids[4]}/purge")
    assert r.status_code == 200, r.text
    assert texts[4] not in json.dumps(r.json())
    assert texts[4] not in json.dumps(http.get(f"{base}/{ids[4]}/history").json())
    assert texts[4] not in http.get(f"/v1/banks/{name}/export", params={"history": "true"}).text
    r = http.get(f"{base}/fp0000000000000000")
    assert r.status_code == 404 and r.json()["code"] == "memory_not_found"


def test_export_and_import(http):
    src, dst = _bank(), _bank()
    for t in ("Alpha fact for export", "Beta fact for export"):
        http.post(f"/v1/banks/{src}/memories", json={"text": t})
    mid = fingerprint("Alpha fact for export")
    http.patch(f"/v1/banks/{src}/memories/{mid}", json={"tags": ["x"]})

    r = http.get(f"/v1/banks/{src}/export")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("application/x-ndjson")
    current = [json.loads(line) for line in r.text.splitlines()]
    assert sorted(m["text"] for m in current) == ["Alpha fact for export", "Beta fact for export"]
    hist = [json.loads(line)
            for line in http.get(f"/v1/banks/{src}/export", params={"history": "true"}).text.splitlines()]
    assert len(hist) == 3 and {h["id"] for h in hist} == {m["id"] for m in current}

    body = r.text.splitlines()
    body.insert(1, "{not json")
    r = http.post(f"/v1/banks/{dst}/import", data=("\n".join(body) + "\n").encode(),
                  headers={"Content-Type": "application/x-ndjson"})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["imported"] == 2 and [e["line"] for e in out["errors"]] == [2]
    got = http.get(f"/v1/banks/{dst}/memories/{mid}").json()["memory"]
    assert got["tags"] == ["x"] and got["revision"] == 1

    # Large files: presigned PUT to S3 (moto), then import by s3_key.
    up = http.post(f"/v1/banks/{dst}/import-uploads").json()
    line = json.dumps({"text": "Gamma fact from an upload", "tags": ["upload"]}) + "\n"
    # The URL is signed for Content-Type application/x-ndjson (chalicelib.storage.blobs.presign_put).
    put = requests.put(up["url"], data=line.encode(), headers={"Content-Type": "application/x-ndjson"}, timeout=30)
    assert put.status_code == 200, put.text
    r = http.post(f"/v1/banks/{dst}/import", json={"s3_key": up["s3_key"]})
    assert r.status_code == 200, r.text
    assert r.json() == {"imported": 1, "skipped": 0, "errors": []}
    assert http.get(f"/v1/banks/{dst}/memories/{fingerprint('Gamma fact from an upload')}"
                    ).json()["memory"]["tags"] == ["upload"]


def test_token_admin_mint_list_revoke(http):
    r = http.post("/v1/api/admin/tokens", json={"kind": "api_key", "permissions": ["memory:read"], "label": "e2e"})
    assert r.status_code == 201, r.text
    minted = r.json()
    assert set(minted) >= {"token", "token_id", "kind", "user_id", "permissions", "label", "expires_at", "banks"}
    listed = http.get("/v1/api/admin/tokens").text
    assert minted["token_id"] in listed and minted["token"] not in listed
    assert http.get("/v1/banks", token=minted["token"]).status_code == 200
    r = http.post("/v1/banks", token=minted["token"], json={"name": _bank()})
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    assert http.delete(f"/v1/api/admin/tokens/{minted['token_id']}").status_code == 200
    r = http.get("/v1/banks", token=minted["token"])
    assert r.status_code == 401 and r.json()["code"] == "unauthorized"


def test_cli_local_stage_reaches_the_local_stack(stack, http, tmp_path):
    """``python -m chalicelib.cli --stage local`` talks to the running stack's moto, found from
    its state directory (the stack runs on non-default ports; no CAIRN_MOTO_PORT is set)."""
    import os
    import subprocess
    import sys

    from .harness import ROOT

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAIRN_", "AWS_ENDPOINT_URL"))}
    env["CAIRN_STATE_DIR"] = str(stack.state_dir)
    done = subprocess.run([sys.executable, "-m", "chalicelib.cli", "--stage", "local", "mint-token", "--org", "cli-org",
                           "--kind", "api_key", "--permissions", "memory:read,memory:write"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    token = json.loads(done.stdout)["token"]
    assert http.post("/v1/banks/cli-bank/memories", token=token,
                     json={"text": "Saved with a CLI token"}).status_code == 201
    done = subprocess.run([sys.executable, "-m", "chalicelib.cli", "--stage", "local", "export", "--org", "cli-org",
                           "--bank", "cli-bank"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert [json.loads(x)["text"] for x in done.stdout.splitlines()] == ["Saved with a CLI token"]
    # Another org's data is invisible to the dev admin of org default.
    assert http.get("/v1/banks/cli-bank/memories").json()["code"] == "bank_not_found"
