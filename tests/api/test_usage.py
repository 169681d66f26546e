"""Usage counters: what GET /v1/usage reports is exactly what the callers did; a retried save
counts once, a failed one not at all; a failure of a read's counter write never fails the read;
concurrent saves to one bank all count."""

from __future__ import annotations

import json
import random
import threading
from collections import Counter

from tests.api.conftest import Api, mint
from tests.api.test_mcp import Mcp

TEXTS = [f"The {w} service deploys on {d}" for w in ("billing", "search", "auth", "mail", "queue")
         for d in ("Monday", "Friday", "Sunday")]


def usage(api: Api, token: str | None = None, **query) -> dict:
    qs = "&".join(f"{k}={v}" for k, v in {"group_by": "token", **query}.items())
    status, body = api.get(f"/v1/usage?{qs}", token=token)
    assert status == 200, body
    return body


def by_token(report: dict) -> dict[str, dict]:
    return {g["key"]: g["totals"] for g in report["groups"]}


def token_id(api: Api, token: str) -> str:
    status, body = api.get("/v1/me", token=token)
    assert status == 200, body
    return body["token_id"]


def chars(*texts: str) -> tuple[int, int]:
    return sum(len(t) for t in texts), sum(len(t.encode()) for t in texts) // 4


def run_together(threads: list[threading.Thread]) -> None:
    """Start every thread, then wait for all of them."""
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def org_totals(org: str) -> dict:
    """The org's totals over the last and next hour (the report's own function)."""
    from chalicelib import clock
    from chalicelib.usage import report
    now = clock.now_ms()
    return report.report(org, now - 3_600_000, now + 3_600_000).totals.shown()


class Expected:
    """What the test itself counts per token: requests by operation and the report's fields."""

    def __init__(self):
        self.ops: dict[str, Counter] = {}
        self.fields: dict[str, Counter] = {}

    def add(self, tid: str, op: str, **fields: int) -> None:
        self.ops.setdefault(tid, Counter())[op] += 1
        f = self.fields.setdefault(tid, Counter())
        f["requests"] += 1
        f.update({k: v for k, v in fields.items() if v})


def one_request(client, api: Api, exp: Expected, rng: random.Random, i: int, tok: str, tid: str):
    """Send one request of a random kind for ``tok``; count it in ``exp``; ``(status, body)``."""
    kind = rng.random()
    bank = f"b{rng.randrange(2)}"
    if kind < 0.2:
        status, body = api.post(f"/v1/banks/{bank}/memories", {"text": rng.choice(TEXTS)}, token=tok)
        exp.add(tid, "save_memory", saved=int(body["created"]), reinforced=int(not body["created"]))
    elif kind < 0.32:
        status, body = api.post(f"/v1/banks/{bank}/recall", {"query": "deploys friday"}, token=tok)
        exp.add(tid, "recall", recalls=1)
    elif kind < 0.4:
        status, body = api.post(f"/v1/banks/{bank}/preview", {"query": "which service deploys"}, token=tok)
        c, t = chars(body["system_prompt_section"], *([body["message"]] if "message" in body else []))
        exp.add(tid, "preview", previews=1, injected_chars=c, injected_tokens=t)
    elif kind < 0.48:
        status, body = api.post("/v1/hooks/pre-generate", {
            "messages": [{"role": "user", "content": "when does search deploy?"}],
            "metadata": {"memory_bank": bank}}, token=tok)
        mut = body["mutations"]
        c, t = chars(mut["system_prompt_append"], *[m["content"] for m in mut["append_messages"]])
        exp.add(tid, "pre_generate", hooks=1, injected_chars=c, injected_tokens=t)
    elif kind < 0.63:
        status, body = api.get(f"/v1/banks/{bank}/memories?limit=5", token=tok)
        exp.add(tid, "list_memories")
    elif kind < 0.78:
        status, body = api.get("/v1/banks", token=tok)
        exp.add(tid, "list_banks")
    elif kind < 0.81:
        status, body = api.put(f"/v1/banks/{bank}/rules/style", {"content": f"# Rule {i}\n"}, token=tok)
        exp.add(tid, "set_rule")
    elif kind < 0.9:
        status, body = Mcp(client, tok).rpc("tools/call", {"name": "memory_recall",
                                                           "arguments": {"bank": bank, "query": "deploys"}})
        assert body["result"]["isError"] is False, body
        exp.add(tid, "recall", recalls=1)  # an MCP tool call counts as its REST operation
    else:
        status, body = api.get(f"/v1/banks/{bank}", token=tok)
        exp.add(tid, "get_bank")
    return status, body


def test_mixed_requests_from_three_tokens_of_two_orgs_count_exactly(client, aws):
    """1,000 requests (saves, re-saves, recalls, previews, hooks, reads, listings, rules, MCP tool
    calls) from 3 tokens of 2 orgs: every token's counters equal the test's own count."""
    api = Api(client, None)
    tokens = [(mint(org="acme", user_id="a1"), "acme"), (mint(org="acme", user_id="a2"), "acme"),
              (mint(org="zenith", user_id="z1"), "zenith")]
    ids = {t: token_id(api, t) for t, _ in tokens}
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    for org in ("acme", "zenith"):  # the banks exist before (no request, nothing counted)
        for bank in ("b0", "b1"):
            service.save_memory(org, bank, SaveRequest(text="Deploys freeze in December"), actor="setup")
    exp = Expected()
    rng = random.Random(18)
    for i in range(1000):
        tok, _org = tokens[rng.randrange(3)]
        status, body = one_request(client, api, exp, rng, i, tok, ids[tok])
        assert status in (200, 201), (i, status, body)
    seen: dict[str, dict] = {}
    for tok, org in tokens[::2]:  # one admin token per org reads its own org's report
        for granularity in ("hour", "day"):
            report = usage(api, tok, granularity=granularity)
            assert report["org"] == org
            seen.update(by_token(report))
    assert set(seen) == set(ids.values())
    for tid, fields in exp.fields.items():
        got = seen[tid]
        # the usage reads themselves are not counted ("none"); /v1/me counts as a read
        assert got["operations"] == {**exp.ops[tid], "me": 1}, tid
        assert {k: got[k] for k in fields} == {k: v + (k == "requests") for k, v in fields.items()}, tid
    # an org's report never shows another org's tokens
    assert ids[tokens[2][0]] not in by_token(usage(api, tokens[0][0]))
    # the operator CLI prints the same report, for one org or across orgs
    status, out = cli_usage("--org", "acme", "--group-by", "token", "--format", "json")
    assert status == 0 and by_token(json.loads(out)) == by_token(usage(api, tokens[0][0]))
    status, out = cli_usage("--all-orgs", "--group-by", "token", "--format", "json")
    assert status == 0 and {k.split("/", 1)[1]: v for k, v in by_token(json.loads(out)).items()} == seen
    status, out = cli_usage("--org", "zenith", "--group-by", "operation")
    lines = out.splitlines()
    assert status == 0 and lines[0].split()[:4] == ["start", "(UTC)", "group", "requests"]
    assert sum(int(x.split()[3]) for x in lines[1:]) == sum(exp.ops[ids[tokens[2][0]]].values()) + 1


def cli_usage(*argv: str) -> tuple[int, str]:
    import io

    from chalicelib import cli
    out, err = io.StringIO(), io.StringIO()
    return cli.main(["--stage", "dev", "usage", *argv], out=out, err=err), out.getvalue()


def test_a_save_retried_with_the_same_idempotency_key_saves_once_and_counts_each_request(api, token):
    tid = token_id(api, token)
    for _ in range(3):
        status, body = api.post("/v1/banks/main/memories", {"text": "Retries count once"},
                                headers={"Idempotency-Key": "k-1"})
        assert status == 201, body
    got = by_token(usage(api))[tid]
    assert got["operations"]["save_memory"] == 3 and got["saved"] == 1 and got["reinforced"] == 0


def test_concurrent_twins_with_one_idempotency_key_save_once(aws, token):
    """Saves sent at once with one key: one commits, the twins replay it; one save counted, and
    each twin as a request."""
    from chalicelib.auth.tokens import authenticate
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.idempotency import make
    from chalicelib.usage import meter
    principal = authenticate(f"Bearer {token}")
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def twin() -> None:
        try:
            with meter.metering(principal, "save_memory", "write", "main"):
                barrier.wait()
                service.save_memory("default", "main", SaveRequest(text="Twins count once"), actor="t",
                                    idem=make(principal.token_id, "save", "twin", b"same"))
                meter.finish()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    run_together([threading.Thread(target=twin) for _ in range(6)])
    assert not errors, errors
    totals = org_totals("default")
    assert totals["operations"] == {"save_memory": 6} and totals["saved"] == 1


def test_a_save_that_fails_in_its_transaction_counts_nothing(api, token, monkeypatch):
    from chalicelib import idempotency
    from chalicelib.storage.tables import BankModel
    tid = token_id(api, token)
    assert api.post("/v1/banks/main/memories", {"text": "One that counts"})[0] == 201
    before = by_token(usage(api))[tid]
    real = idempotency.add_to

    def add_failing_check(tx, *args, **kw):
        real(tx, *args, **kw)
        tx.condition_check(BankModel, "no-such-org", "no-such-bank", condition=BankModel.name.exists())

    monkeypatch.setattr(idempotency, "add_to", add_failing_check)
    monkeypatch.setenv("CAIRN_WRITE_RETRIES", "2")
    status, body = api.post("/v1/banks/main/memories", {"text": "One that fails"})
    assert status == 503 and body["code"] == "write_contention", body
    after = by_token(usage(api))[tid]
    assert after == before


def test_a_fault_in_a_reads_counter_write_leaves_the_answer_and_emits_usage_lost(api, token, monkeypatch, capsys):
    from chalicelib.search import recall
    from chalicelib.usage import meter
    assert api.post("/v1/banks/main/memories", {"text": "Faults never fail a read"})[0] == 201
    monkeypatch.setattr(recall, "now_ms", lambda: 1_900_000_000_000)  # the same recency both times
    good = api.post("/v1/banks/main/recall", {"query": "faults read"})
    capsys.readouterr()

    class Broken:
        def update_item(self, **kw):
            raise RuntimeError("the usage table is unreachable")

    monkeypatch.setattr(meter, "_client", lambda: Broken())
    faulty = api.post("/v1/banks/main/recall", {"query": "faults read"})
    assert faulty == good and faulty[0] == 200
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    lost = [x for x in lines if x.get("Event") == "usage" and x.get("UsageLost") == 1]
    assert lost and lost[0]["operation"] == "recall" and lost[0]["error"] == "RuntimeError"


def test_twenty_concurrent_saves_to_one_bank_all_succeed_with_exact_counters(aws, token, monkeypatch):
    """20 writers save at once into one 16-lane bank, rate limits on: every save succeeds; the
    counters say 20 saves, as many as the bank's lanes hold."""
    from chalicelib.auth.tokens import authenticate
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.core.store import get_bank_head
    from chalicelib.usage import meter
    monkeypatch.setenv("CAIRN_RATE_REQUESTS_PER_MINUTE", "600")
    principal = authenticate(f"Bearer {token}")
    service.save_memory("default", "main", SaveRequest(text="The bank exists first"), actor="t")
    barrier = threading.Barrier(20)
    errors: list[BaseException] = []

    def writer(i: int) -> None:
        try:
            with meter.metering(principal, "save_memory", "write", "main"):
                barrier.wait()
                service.save_memory("default", "main", SaveRequest(text=f"Concurrent writer number {i} saved"),
                                    actor="t")
                meter.finish()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    run_together([threading.Thread(target=writer, args=(i,)) for i in range(20)])
    assert not errors, errors
    totals = org_totals("default")
    assert totals["operations"] == {"save_memory": 20} and totals["saved"] == 20
    assert get_bank_head("default", "main").memories == 21


def test_usage_as_csv_by_day_and_operation(api):
    assert api.post("/v1/banks/main/memories", {"text": "CSV rows"})[0] == 201
    resp = api.client.http.get("/v1/usage?format=csv&granularity=day&group_by=operation",
                               headers={"Authorization": f"Bearer {api.token}"})
    assert resp.status_code == 200 and resp.headers["Content-Type"] == "text/csv"
    rows = resp.body.decode().splitlines()
    assert rows[0].startswith("start,group,requests,saved,")
    assert [r.split(",")[1:3] for r in rows[1:]] == [["save_memory", "1"]]
    assert int(rows[1].split(",")[0]) % 86_400_000 == 0


def test_rule_writes_count_their_stored_bytes_delta(api):
    def stored() -> int:
        return usage(api, group_by="bank")["totals"]["stored_bytes_delta"]

    assert api.put("/v1/banks/main/rules/style", {"content": "Answer in plain English, please: é"})[0] == 200
    assert stored() == len("Answer in plain English, please: é".encode())
    assert api.put("/v1/banks/main/rules/style", {"content": "Be brief."})[0] == 200
    assert stored() == len("Be brief.")
    assert api.delete("/v1/banks/main/rules/style")[0] in (200, 204)
    assert stored() == 0


def test_usage_needs_admin_usage_and_a_bounded_range(api, aws):
    reader = mint(permissions=["memory:read"])
    status, body = api.get("/v1/usage", token=reader)
    assert status == 403 and body["details"]["required"] == "admin.usage"
    status, body = api.get(f"/v1/usage?from=0&to={94 * 86_400_000}")
    assert status == 400 and body["details"]["field"] == "from"
    status, body = api.get("/v1/usage?from=10&to=5")
    assert status == 400 and body["details"]["field"] == "to"
    status, body = api.get("/v1/usage?group_by=nothing")
    assert status == 400 and body["details"]["field"] == "group_by"


def test_the_template_alarms_on_the_5xx_rate_and_on_rate_limited_requests():
    from infra.local.resources import load_template
    t = load_template()
    errors, throttles = t["Resources"]["ApiErrorRateAlarm"], t["Resources"]["RateLimitedAlarm"]
    assert errors["Type"] == throttles["Type"] == "AWS::CloudWatch::Alarm"
    e = errors["Properties"]
    assert (e["Namespace"], e["MetricName"], e["Statistic"], e["Threshold"]) == (
        "AWS/ApiGateway", "5XXError", "Average", 0.05)  # the average of 5XXError is the 5xx rate
    r = throttles["Properties"]
    assert (r["Namespace"], r["MetricName"], r["Statistic"]) == ("Cairn", "RateLimited", "Sum")
    assert {d["Name"]: d["Value"] for d in r["Dimensions"]} == {"Stage": {"Ref": "CairnStage"}, "Event": "usage"}
    assert r["Threshold"] == {"Ref": "RateLimitedAlarmThreshold"} and "RateLimitedAlarmThreshold" in t["Parameters"]


def test_a_warm_save_spends_its_buckets_first_and_counts_inside_its_one_transaction(api, monkeypatch):
    """With rate limits on, a save first spends the token's write bucket and the org's bucket (two
    updates sent at once, before the write's work), then writes its transaction, which carries the
    counter item; no other usage call."""
    from chalicelib.storage.tables import ALL_MODELS, connection
    monkeypatch.setenv("CAIRN_RATE_REQUESTS_PER_MINUTE", "600")
    assert api.post("/v1/banks/main/memories", {"text": "The first save makes the bank"})[0] == 201
    assert api.post("/v1/banks/main/memories", {"text": "A second save warms the path"})[0] == 201
    calls: list[tuple[str, list[str]]] = []

    def hook(model=None, params=None, **kw):
        body = json.loads((params or {}).get("body") or b"{}")
        tables = [body["TableName"]] if "TableName" in body else list(body.get("RequestItems") or {})
        for item in body.get("TransactItems") or []:
            tables += [op["TableName"] for op in item.values()]
        calls.append((model.name, sorted(tables)))

    clients = {id(c): c for c in [m._get_connection().connection.client for m in ALL_MODELS]
               + [connection().client]}.values()
    for c in clients:
        c.meta.events.register("before-call.dynamodb", hook)
    try:
        assert api.post("/v1/banks/main/memories", {"text": "The measured save"})[0] == 201
    finally:
        for c in clients:
            c.meta.events.unregister("before-call.dynamodb", hook)
    writes = [c for c in calls if c[0] in ("TransactWriteItems", "UpdateItem", "PutItem", "DeleteItem")
              and "tokens" not in str(c[1])]
    # after the commit, the bank's version item moves (core.store.bump_versions): bookkeeping, no usage
    assert writes[-1] == ("UpdateItem", ["cairn-test-banks"]), calls
    writes = writes[:-1]
    assert [w[0] for w in writes] == ["UpdateItem", "UpdateItem", "TransactWriteItems"], calls
    assert writes[0][1] == writes[1][1] == ["cairn-test-usage"]  # the token's and the org's buckets
    assert writes[2][1].count("cairn-test-usage") == 1  # the counter shard
    assert len([c for c in calls if "cairn-test-usage" in c[1]]) == 3, calls


def test_a_hook_naming_a_formula_bank_counts_under_the_org_and_the_csv_has_no_formula(api):
    """A hook's ``memory_bank`` is client text: a bad name is answered ``invalid-bank-name``, counted
    under ``org`` (never stored as a group key), and no CSV cell starts a spreadsheet formula."""
    from chalicelib.usage import report
    for bank in ('=HYPERLINK("http://evil","x")', "+1+1", "@SUM(A1)", "-2"):
        status, body = api.post("/v1/hooks/pre-generate", {"messages": [{"role": "user", "content": "hi"}],
                                                            "metadata": {"memory_bank": bank}})
        assert status == 200 and body["retrieval"].endswith("invalid-bank-name"), body
    resp = api.client.http.get("/v1/usage?format=csv", headers={"Authorization": f"Bearer {api.token}"})
    assert resp.status_code == 200
    rows = resp.body.decode().splitlines()[1:]
    assert [r.split(",")[1] for r in rows] == ["org"] and rows[0].split(",")[2] == "4", rows
    rep = report.Report("default", 0, 1, "hour", "bank", report.Totals(), [report.Group("=cmd|' /C calc'!A0")])
    rep.groups[0].series[0].values["requests"] = 1
    assert rep.as_csv().splitlines()[1].startswith("0,'=cmd|"), rep.as_csv()


def test_a_bad_from_names_the_parameter_from(api):
    for q in ("from=-1", "from=1.5", "from=abc"):
        status, body = api.get(f"/v1/usage?{q}")
        assert status == 400 and body["details"]["field"] == "from" and body["error"].startswith("from "), body
