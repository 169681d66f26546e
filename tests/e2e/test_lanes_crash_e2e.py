"""Write lanes over real HTTP: kill -9 of the local stack in the middle of a big import and a
burst of concurrent saves into one bank, restart, then the bank's counters, listing, items,
history and recall agree and every acknowledged save is there."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import requests

from tests.api.lanes import word

from .conftest import Http
from .harness import LocalStack
from .test_durability_e2e import RESTART_READY_S, _refused

TOKEN = "cairn_e2e_attack_lanes_token_0123456789"
ND = {"Content-Type": "application/x-ndjson"}


def _all_live(http: Http, bank: str) -> tuple[list[dict], int]:
    """Every live memory of ``bank`` through the listing's pages, and the total it reports."""
    out, cursor, total = [], None, None
    while True:
        params = {"limit": 500, **({"cursor": cursor} if cursor else {})}
        r = http.get(f"/v1/banks/{bank}/memories", params=params)
        assert r.status_code == 200, r.text
        body = r.json()
        total = body["total"] if total is None else total
        out.extend(body["memories"])
        cursor = body.get("next_cursor")
        if not cursor:
            return out, total


def test_kill_9_mid_import_and_mid_burst_then_counters_listing_history_recall_agree(tmp_path):
    s = LocalStack(tmp_path / "state", TOKEN, tmp_path / "stack.log").start()
    acked: list[str] = []
    stop, finished = threading.Event(), threading.Event()
    try:
        http = Http(s.base_url, s.token)
        assert http.post("/v1/banks", json={"name": "crash"}).status_code == 201
        lines = "\n".join(json.dumps({"id": f"fp{i % 2500:016x}", "text": f"crash import line {i % 2700}",
                                      "revision": i % 3}) for i in range(3000)) + "\n"

        def importer() -> None:
            try:
                Http(s.base_url, s.token).post("/v1/banks/crash/import", data=lines, headers=ND)
                finished.set()
            except requests.RequestException:
                pass  # killed mid-import

        def saver(c: int) -> None:
            h = Http(s.base_url, s.token)
            i = 0
            while not stop.is_set():
                try:
                    r = h.post("/v1/banks/crash/memories", json={"text": f"crash burst {word(c)} {word(i)}"})
                    sh = h.post("/v1/banks/crash/memories", json={"text": "the one shared crash memory"})
                except requests.RequestException:
                    return
                if r.status_code == 201:
                    acked.append(r.json()["memory"]["id"])
                if sh.status_code in (200, 201):
                    acked.append(sh.json()["memory"]["id"])
                i += 1

        with ThreadPoolExecutor(5) as pool:
            pool.submit(importer)
            for c in range(4):
                pool.submit(saver, c)
            time.sleep(4)
            ports = (s.port, s.moto_port)
            s.kill_group()
            stop.set()
        assert _refused(ports[0]) and _refused(ports[1])
    except BaseException:
        s.stop()
        raise
    assert len(acked) >= 8
    s.start(ports=ports, timeout_s=RESTART_READY_S)
    try:
        http = Http(s.base_url, s.token)
        live, total = _all_live(http, "crash")
        ids = {m["id"] for m in live}
        print("import finished before the kill:", finished.is_set(), "acked", len(acked), "live", len(live))
        assert set(acked) <= ids, f"{len(set(acked) - ids)} acknowledged saves lost"
        bank = http.get("/v1/banks/crash").json()["bank"]
        assert bank["memories"] == total == len(live), (bank, total, len(live))
        assert bank["pinned"] == sum(1 for m in live if m.get("pinned"))
        shared = next(m for m in live if m["text"] == "the one shared crash memory")
        hist = http.get(f"/v1/banks/crash/memories/{shared['id']}/history").json()["revisions"]
        assert len(hist) == shared["corroboration"] + 1
        assert sorted(r["revision"] for r in hist) == list(range(len(hist)))
        r = http.post("/v1/banks/crash/recall", json={"query": "the one shared crash memory", "limit": 5}).json()
        assert r["memories"][0]["memory"]["id"] == shared["id"]
        # a new save after the restart is recalled at once
        new = http.post("/v1/banks/crash/memories", json={"text": "after restart zebra marmalade"}).json()
        r = http.post("/v1/banks/crash/recall", json={"query": "zebra marmalade", "limit": 5}).json()
        assert [m["memory"]["id"] for m in r["memories"]][:1] == [new["memory"]["id"]]
        # the bank's clock in DynamoDB equals the revisions stored
        ddb = s.dynamodb()
        row = ddb.get_item(TableName="cairn-local-banks", ConsistentRead=True,
                           Key={"org_id": {"S": "default"}, "name": {"S": "crash"}})["Item"]
        inc = row["incarnation"]["S"]
        revs, kw = 0, {}
        while True:
            page = ddb.query(TableName="cairn-local-revisions", ConsistentRead=True, Select="COUNT",
                             KeyConditionExpression="bank_key = :b",
                             ExpressionAttributeValues={":b": {"S": inc}}, **kw)
            revs += page["Count"]
            if "LastEvaluatedKey" not in page:
                break
            kw = {"ExclusiveStartKey": page["LastEvaluatedKey"]}
        assert s.bank_seq("crash") == revs
    finally:
        assert s.stop() == 0
