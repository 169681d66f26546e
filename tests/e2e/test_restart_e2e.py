"""Data survives a clean restart of the local stack (compacted into one snapshot on stop,
loaded on start), and --fresh starts empty."""

from __future__ import annotations

from .conftest import Http
from .harness import LocalStack

TOKEN = "cairn_e2e_restart_token_abcdef012345"


def test_memory_and_token_survive_restart(tmp_path):
    s = LocalStack(tmp_path / "state", TOKEN, tmp_path / "stack.log").start()
    try:
        http = Http(s.base_url, s.token)
        saved = http.post("/v1/banks/keep/memories", json={"text": "This memory outlives a restart"})
        assert saved.status_code == 201
        http.put("/v1/banks/keep/rules/style", json={"content": "Keep it short."})
        minted = http.post("/v1/api/admin/tokens", json={"kind": "api_key", "permissions": ["memory:read"]}).json()
    finally:
        assert s.stop() == 0
    assert (tmp_path / "state" / "snapshot.bin").exists()
    assert not list((tmp_path / "state").glob("journal-*"))  # a clean stop leaves the snapshot only

    s.start()
    try:
        http = Http(s.base_url, minted["token"])
        r = http.get(f"/v1/banks/keep/memories/{saved.json()['memory']['id']}")
        assert r.status_code == 200, r.text
        assert r.json()["memory"]["text"] == "This memory outlives a restart"
        assert [x["content"] for x in http.get("/v1/banks/keep/rules").json()["rules"]] == ["Keep it short."]
    finally:
        assert s.stop() == 0

    s.start("--fresh")
    try:
        r = Http(s.base_url, s.token).get("/v1/banks/keep/memories")
        assert r.status_code == 404 and r.json()["code"] == "bank_not_found"
        assert Http(s.base_url, minted["token"]).get("/v1/banks").status_code == 401
    finally:
        assert s.stop() == 0
