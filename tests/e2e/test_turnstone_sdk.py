"""The Turnstone SDK (1.8.7, its client without its server) against the local stack over real HTTP:
``TurnstoneServer`` save, upsert, list, search, get, delete and
``TurnstoneConsole`` admin list, search, get, description patch, delete. The SDK validates every
response with its pydantic models (``turnstone.api.server_schemas`` / ``console_schemas``); the
driver also validates each memory row against ``server_schemas.MemoryInfo`` (content included).

The SDK runs in its own virtualenv, cached under ``.cairn-local/turnstone-sdk-1.8.7``: ``pip
install --no-deps turnstone==1.8.7`` (its server dependencies stay out), then the four packages
the client imports: httpx, pydantic, structlog, python-frontmatter (found by importing
``turnstone.sdk`` in a bare venv).
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import uuid
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".cairn-local" / "turnstone-sdk-1.8.7"
SDK = "turnstone==1.8.7"
CLIENT_DEPS = ["httpx", "pydantic", "structlog", "python-frontmatter"]

DRIVER = textwrap.dedent('''
    import json, os, sys
    from turnstone.api.server_schemas import MemoryInfo, MemorySummary, ListMemoriesResponse
    from turnstone.sdk import TurnstoneConsole, TurnstoneServer, TurnstoneAPIError

    base, tok, admin_tok, sfx = os.environ["BASE"], os.environ["TOKEN"], os.environ["ADMIN_TOKEN"], os.environ["SFX"]
    out = {}

    import httpx

    def rows(resp, method, path, **kw):
        # the SDK validated resp; the raw body's rows must also carry content (older releases' MemoryInfo)
        raw = httpx.request(method, base + path, headers={"Authorization": "Bearer " + tok}, **kw).json()
        ListMemoriesResponse.model_validate(raw)
        for m in raw["memories"]:
            MemoryInfo.model_validate(m)
        assert [m["memory_id"] for m in raw["memories"]] == [m.memory_id for m in resp.memories]
        return [m.memory_id for m in resp.memories]

    def err(fn):
        try:
            fn()
        except TurnstoneAPIError as e:
            return [e.status_code, e.message]
        return None

    with TurnstoneServer(base, token=tok) as c, TurnstoneConsole(base, token=admin_tok) as a:
        name = f"SDK Note {sfx}"
        m1 = c.save_memory(name, "Deploy via the blue pipeline.", description="How we deploy", mem_type="reference")
        m2 = c.save_memory(name, "Deploy via the green pipeline.", description="How we  deploy now")
        out["save"] = m1.model_dump(); out["upsert"] = m2.model_dump()
        out["list"] = rows(c.list_memories(limit=200), "GET", "/v1/api/memories", params={"limit": 200})
        out["list_type"] = rows(c.list_memories(mem_type="reference", scope="global", limit=200), "GET",
                                "/v1/api/memories", params={"type": "reference", "scope": "global", "limit": 200})
        q = f"green pipeline {sfx}"
        out["search"] = rows(c.search_memories(q, limit=10), "POST", "/v1/api/memories/search",
                             json={"query": q, "limit": 10})
        g = c.get_memory(name)
        out["get"] = MemoryInfo.model_validate(g.model_dump()).model_dump()
        mine = c.save_memory(f"mine_{sfx}", "Only mine.", description="private", scope="user")
        out["user_scope"] = [mine.scope, mine.scope_id]
        out["bad_type"] = err(lambda: c.save_memory("x", "y", description="z", mem_type="nope"))
        out["delete"] = c.delete_memory(name).model_dump()
        out["get_deleted"] = err(lambda: c.get_memory(name))
        out["delete_again"] = err(lambda: c.delete_memory(name))

        m3 = c.save_memory(f"admin_{sfx}", "Rotate keys every 90 days.", description="Key rotation")
        out["admin_list"] = [m.memory_id for m in a.list_memories(scope="global", limit=200).memories]
        out["admin_search"] = [m.memory_id for m in a.search_memories(f"rotate keys {sfx}", limit=5).memories]
        out["admin_get"] = a.get_memory(m3.memory_id).model_dump()
        out["admin_patch"] = a.update_memory_description(m3.memory_id, "  Key   rotation policy ").model_dump()
        out["admin_delete"] = a.delete_memory(m3.memory_id).model_dump()
        out["admin_get_deleted"] = err(lambda: a.get_memory(m3.memory_id))
        out["admin_delete_again"] = err(lambda: a.delete_memory(m3.memory_id))
        out["ids"] = {"m1": m1.memory_id, "m3": m3.memory_id, "mine": mine.memory_id}
    print(json.dumps(out))
''')


def _python() -> Path:
    py = VENV / "bin" / "python"
    marker = VENV / ".ready"
    if not marker.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
        pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, "--no-deps", SDK], check=True)
        subprocess.run(pip + CLIENT_DEPS, check=True)
        subprocess.run([str(py), "-c", "import turnstone.sdk, turnstone.api.server_schemas"], check=True)
        marker.write_text(SDK + "\n")
    return py


@pytest.fixture(scope="module")
def sdk_python():
    try:
        return _python()
    except subprocess.CalledProcessError as exc:  # no index reachable: say so rather than pass
        pytest.fail(f"could not install the Turnstone SDK into {VENV}: {exc}")


def test_turnstone_sdk_round_trip(stack, http, sdk_python):
    user = "sdk_" + uuid.uuid4().hex[:8]
    r = http.post("/v1/api/admin/tokens", json={"kind": "person", "user_id": user,
                                                "permissions": ["memory:read", "memory:write"]})
    assert r.status_code == 201, r.text
    sfx = uuid.uuid4().hex[:8]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAIRN_", "PYTHON"))}
    env.update(BASE=stack.base_url, TOKEN=r.json()["token"], ADMIN_TOKEN=stack.token, SFX=sfx)
    done = subprocess.run([str(sdk_python), "-c", DRIVER], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    ids = out["ids"]
    name = f"sdk_note_{sfx}"

    assert out["save"]["name"] == name and out["save"]["type"] == "reference" and out["save"]["scope"] == "global"
    assert out["upsert"]["memory_id"] == ids["m1"] and out["upsert"]["created"] == out["save"]["created"]
    assert out["upsert"]["type"] == "reference" and out["upsert"]["description"] == "How we deploy now"
    assert ids["m1"] in out["list"] and ids["m1"] in out["list_type"]
    assert out["search"][0] == ids["m1"]
    assert out["get"]["content"] == "Deploy via the green pipeline." and out["get"]["memory_id"] == ids["m1"]
    assert out["user_scope"] == ["user", user]
    assert out["bad_type"] == [400, "invalid type: nope; must be one of ['feedback', 'general', 'reference', 'user']"]
    assert out["delete"] == {"status": "ok"}
    assert out["get_deleted"] == [404, f"Memory '{name}' not found"]
    assert out["delete_again"] == [404, f"Memory '{name}' not found"]

    assert ids["m3"] in out["admin_list"] and ids["mine"] not in out["admin_list"]  # scope=global only
    assert out["admin_search"][0] == ids["m3"]
    assert out["admin_get"]["content"] == "Rotate keys every 90 days."
    assert out["admin_patch"]["description"] == "Key rotation policy"
    assert out["admin_delete"] == {"status": "ok"}
    assert out["admin_get_deleted"] == [404, "Memory not found"]
    assert out["admin_delete_again"] == [404, "Memory not found"]
