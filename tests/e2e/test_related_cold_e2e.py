"""A save into a bank whose index the API's container does not hold, on the local stack: the save
answers ``related_checked: false`` at once, and the launcher's queue worker (another process, with
its own index cache) runs the check it skipped and links the conflict."""

from __future__ import annotations

import json

from .test_extraction_e2e import wait_for

BANK = "e2e-related-cold"
M = f"/v1/banks/{BANK}/memories"
OLD = "Heron's public launch is planned for June 15, 2026."
NEW = "Heron's public launch moved to July 20, 2026 because of the Stripe certification delay."
FILLERS = 201  # more than a write reads whole (search.neighbours.REBUILD_MAX)


def test_a_cold_save_answers_at_once_and_the_worker_links_its_conflict(stack, http):
    r = http.post(M, json={"text": OLD, "entities": ["heron"]})
    assert r.status_code == 201, r.text
    old = r.json()["memory"]["id"]
    lines = [json.dumps({"text": f"Filler memory number {i} about the Heron rollout.", "created_at": 1,
                         "updated_at": 1}) for i in range(FILLERS)]
    r = http.post(f"/v1/banks/{BANK}/import", data="\n".join(lines),
                  headers={"Content-Type": "application/x-ndjson"})
    assert r.status_code == 200 and r.json()["imported"] == FILLERS, r.text
    assert http.post("/v1/reload").status_code == 200  # the API's container drops its indexes

    r = http.post(M, json={"text": NEW, "entities": ["heron"]})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["related_checked"] is False and body["related"] == []
    new = body["memory"]["id"]

    linked = wait_for(lambda: http.get(f"{M}/{old}").json()["memory"].get("conflicts_with"))
    assert linked == [new]
    assert http.get(f"{M}/{new}").json()["memory"]["conflicts_with"] == [old]
    revs = http.get(f"{M}/{old}/history").json()["revisions"]
    assert [r["op"] for r in revs] == ["create", "link"] and "detected after its save" in revs[-1]["why"]
