"""Rows of the interface documents that Cairn restores or answers for, each test quoting the text
it holds to."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("method,path,status", [
    ("GET", "/v1/no-such-route", 404), ("POST", "/a/b/c/d/e", 404), ("PUT", "/v1/doctor", 405),
    ("DELETE", "/v1/banks", 405), ("PATCH", "/v1/reload", 405),
])
def test_every_response_carries_a_request_id(client, token, method, path, status):
    """Logs and metrics: "One JSON line per request ... `request_id` (also the `X-Request-Id`
    response header)". Unknown-route 404 and 405 answers carried none."""
    resp = getattr(client.http, method.lower())(path, headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == status
    assert len(resp.headers.get("X-Request-Id", "")) >= 16
    other = getattr(client.http, method.lower())(path, headers={"Authorization": f"Bearer {token}"})
    assert other.headers["X-Request-Id"] != resp.headers["X-Request-Id"]  # one per request


def test_reload_returns_banks_and_config_version(api):
    """Memory worker interface, reload: "Drop all in-RAM state and reload every bank from disk"
    answering ``banks`` (integer, required: how many were dropped and reloaded); Cairn's
    ``config_version`` stays beside it."""
    assert api.post("/v1/banks/main/memories", {"text": "Alice prefers green tea"})[0] == 201
    assert api.post("/v1/banks/other/memories", {"text": "Bob prefers coffee"})[0] == 201
    api.post("/v1/banks/main/recall", {"query": "tea"})
    api.post("/v1/banks/other/recall", {"query": "coffee"})
    status, body = api.post("/v1/reload")
    assert status == 200 and set(body) == {"banks", "config_version"}
    assert body["banks"] >= 2 and isinstance(body["config_version"], int)
    assert api.post("/v1/reload")[1]["banks"] == 0  # nothing cached since


def test_team_memory_projection_cannot_be_reached_through_any_route(api, app):
    """Team memory, Retrieval: "Accepting creates (or refreshes) a source of kind `memory` ...
    Memory sources cannot be created, deleted or reclassified through the source API (`409
    memory_managed`)." Cairn has no source API: the projection of accepted revisions is the
    internal namespace ``!space/<id>``, which no bank route can name (bank names are
    ``[a-z0-9][a-z0-9_-]{0,63}``, checked whole). Every route with a ``{bank}`` parameter, with
    every method, is tried on the namespace (raw and percent-encoded); none answers 2xx, and
    the projection (its record, bank row and retrieval result) stays exactly as accepted, also
    after the entry's title and classification are changed (pending until accepted again)."""
    from urllib.parse import quote

    from chalicelib.core import store
    from chalicelib.team.accept import namespace
    from tests.api.team_support import MEM, World

    world = World(api)
    e = world.create()
    world.write_text("alice", e["id"], "Orders live in Postgres 16.")
    assert world.accept("bob", e["id"])[0] == 200
    ns = namespace(world.space)

    def projection():
        row = store.get_bank_row("default", ns)
        item = store.get_item(row.incarnation, e["id"])
        return (int(row.seq), row.incarnation, store.record_of(item).model_dump_json(),
                world.retrieve("reader", "orders postgres")[1]["results"][0]["title"])

    before = projection()
    values = {"memory_id": e["id"], "name": "rule", "trashed_to": "x"}
    tried = 0
    for path, entries in app.routes.items():
        if "{bank}" not in path:
            continue
        for method in entries:
            for bank in (ns, quote(ns, safe=""), quote(ns, safe="!")):
                url = path.replace("{bank}", bank)
                for key, value in values.items():
                    url = url.replace("{" + key + "}", value)
                status, body = api.call(method, url, {} if method in ("POST", "PUT", "PATCH") else None)
                assert status >= 400, (method, url, status, body)
                tried += 1
    assert tried >= 60
    assert world.call("alice", "PATCH", f"{MEM}/entries/{e['id']}",
                      {"title": "Use MySQL", "classification": "restricted"})[0] == 200
    assert projection() == before
