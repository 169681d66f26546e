"""The Python client (clients/python, ``cairn_client``) against the real local stack: every
operation of openapi.json called through it, errors mapped to their classes, a save retried after a
dropped connection reinforcing once, Retry-After honoured, iterators past one page, the async
client. Faults are injected in the client's httpx transport, which forwards to the real stack."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from cairn_client import AsyncCairn, Cairn, Conflict, NotFound, ServiceUnavailable, Unauthorized, as_data
from cairn_client._operations import OPERATIONS

from chalicelib.fingerprint import fingerprint
from tests.api.team_support import Editor, b64

from .conftest import DEV_TOKEN
from .harness import LocalStack

ROOT = Path(__file__).resolve().parents[2]
RW = ["context:space:read", "context:space:write"]


def data(value: Any) -> Any:
    """A response as plain JSON data, whether the document names a model for it or not."""
    return as_data(value)


def uid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _operation_of(method: str, path: str) -> str | None:
    """The operationId a request went to (literal path segments win over placeholders)."""
    best: tuple[int, str] | None = None
    for op_id, op in OPERATIONS.items():
        if op.method != method:
            continue
        pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(op.path)) + "$"
        if re.match(pattern, path):
            rank = op.path.count("{")
            if best is None or rank < best[0]:
                best = (rank, op_id)
    return best[1] if best else None


class Recorder(httpx.BaseTransport):
    """Forwards to the stack; remembers the operationId of each request and its status."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.seen: dict[str, set[int]] = {}
        self.requests: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        response = self.inner.handle_request(request)
        op_id = _operation_of(request.method, request.url.path)
        if op_id is not None:
            self.seen.setdefault(op_id, set()).add(response.status_code)
        return response


class DropAfterForwarding(httpx.BaseTransport):
    """Forwards each request to the stack, but for the first ``drops`` requests matching
    ``method``/``path_suffix`` raises a connection error after the stack answered: the change is
    made, the client never sees the answer."""

    def __init__(self, method: str, path_suffix: str, drops: int = 1) -> None:
        self.inner = httpx.HTTPTransport()
        self.method, self.suffix, self.drops = method, path_suffix, drops
        self.sent: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        response = self.inner.handle_request(request)
        if self.drops and request.method == self.method and request.url.path.endswith(self.suffix):
            self.drops -= 1
            response.read()
            response.close()
            raise httpx.RemoteProtocolError("server disconnected without sending a response", request=request)
        return response


class FirstAnswers(httpx.BaseTransport):
    """Answers the first ``len(answers)`` requests itself (``(status, headers)``), then forwards to
    the stack."""

    def __init__(self, answers: list[tuple[int, dict[str, str]]]) -> None:
        self.inner = httpx.HTTPTransport()
        self.answers = list(answers)
        self.sent = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent += 1
        if self.answers:
            status, headers = self.answers.pop(0)
            return httpx.Response(status, headers=headers, json={"error": "busy", "code": "unavailable"},
                                  request=request)
        return self.inner.handle_request(request)


@pytest.fixture
def cairn(stack):
    with Cairn(stack.base_url, stack.token) as client:
        yield client


# --- every operation ---------------------------------------------------------------------------

def _banks_and_memories(c: Cairn) -> None:
    bank, other = uid("cl-bank"), uid("cl-other")
    assert data(c.banks.create(bank, "client test bank"))["created"] is True
    assert data(c.banks.get(bank))["bank"]["name"] == bank
    assert data(c.banks.update(bank, "described"))["bank"]["description"] == "described"
    assert bank in {b["name"] for b in map(data, c.banks.iter(limit=1))}  # list_banks, every page
    saved = data(c.memories.save(bank, "The deploy runs on Fridays", tags=["ops"], entities=["deploy"]))
    mid = saved["memory"]["id"]
    corrected = data(c.memories.save(bank, "The deploy now runs on Mondays"))
    other_mid = corrected["memory"]["id"]
    # the correction names what it contradicts, and both are linked (the earlier one's revision 1)
    assert [(r["id"], r["relation"], r["action"]) for r in corrected["related"]] == [(mid, "conflict", "linked")]
    assert [(x["memory"]["id"], [e["id"] for e in x["earlier"]]) for x in data(c.memories.conflicts(bank))[
        "conflicts"]] == [(other_mid, [mid])]
    assert [m["id"] for m in map(data, c.memories.iter(bank, limit=1))] == [other_mid, mid]
    assert data(c.memories.list(bank, tag="ops"))["total"] == 1
    assert data(c.memories.get(bank, mid))["memory"]["text"] == "The deploy runs on Fridays"
    assert data(c.memories.update(bank, mid, text="The deploy runs on Fridays at noon"))["memory"]["revision"] == 2
    assert data(c.memories.pin(bank, mid))["memory"]["pinned"] is True
    assert len(data(c.memories.history(bank, mid))["revisions"]) >= 2
    assert data(c.banks.tags(bank))["tags"] == [{"tag": "ops", "count": 1}]
    assert data(c.banks.recall(bank, "deploy"))["memories"]
    assert "system_prompt_section" in data(c.banks.preview(bank, "when is the deploy?"))
    assert data(c.rules.set(bank, "style", "# Style\n\nAnswer briefly."))["exists"] is True
    assert data(c.rules.get(bank, "style"))["rule"]["name"] == "style"
    assert [r["name"] for r in data(c.rules.list(bank))["rules"]] == ["style"]
    assert data(c.rules.delete(bank, "style")) == {"exists": False}
    assert data(c.memories.pin(bank, mid, False))["memory"]["pinned"] is False
    assert data(c.memories.supersede(bank, mid, other_mid))["memory"]["superseded_by"] == other_mid
    gone = data(c.memories.save(bank, "A fact to delete"))["memory"]["id"]
    assert data(c.memories.delete(bank, gone))["memory"]["id"] == gone
    tomb = data(c.memories.purge(bank, gone))["memory"]
    assert tomb["id"] != gone and tomb["text"] == "" and tomb["purged_at"]  # the id went with the text

    exported = c.banks.export(bank)
    assert isinstance(exported, bytes) and len(exported.splitlines()) == 3
    # inline import, then the same lines through a presigned upload
    assert data(c.banks.import_(other, exported))["errors"] == []
    assert data(c.banks.import_(other, [{"text": "An uploaded fact"}], upload=True))["imported"] == 1
    assert data(c.banks.upload_url(other))["s3_key"]
    assert data(c.memories.get(other, fingerprint("An uploaded fact")))["memory"]["text"] == "An uploaded fact"

    trashed_to = data(c.banks.trash(other))["trashed_to"]
    assert other in {b["name"] for b in data(c.banks.list(trashed=True))["banks"]}
    assert data(c.banks.restore(other, trashed_to))["bank"]["name"] == other

    assert data(c.hooks.pre_generate(messages=[{"role": "user", "content": "when is the deploy?"}],
                                     metadata={"memory_bank": bank}, session_id="cl-s1"))["mutations"] is not None
    turn = data(c.hooks.turn_completed("cl-s1", "t1", [{"role": "user", "content": "Remember I like tea."}],
                                       metadata={"memory_bank": bank}))
    assert turn["bank"] == bank
    assert data(c.hooks.session_deleted("cl-s1"))["session_id"] == "cl-s1"
    assert data(c.banks.forget_session(bank, "cl-s1"))["session_id"] == "cl-s1"


def _service(c: Cairn, stack, transport: httpx.BaseTransport) -> None:
    assert data(c.health()) == {"status": "ok"}
    assert data(c.me())["user_id"] == "dev"
    assert data(c.openapi())["openapi"].startswith("3.1")
    assert "checks" in data(c.doctor())
    assert "config_version" in data(c.reload())
    assert "banks" in data(c.status())
    assert "console/app.js" in c.console_page() and c.console_asset("app.js")
    assert "totals" in data(c.usage(group_by="operation"))
    limits = data(c.usage_limits())
    assert data(c.lower_usage_limits(memories_per_bank=None))["effective"] == limits["effective"]
    listed = data(c.mcp({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    assert "memory_recall" in {t["name"] for t in listed["result"]["tools"]}
    assert c.mcp({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None  # 202, no body
    minted = data(c.tokens.mint("api_key", permissions=["memory:read"], label="client e2e"))
    assert minted["token"] and minted["token_id"] in {t["token_id"] for t in data(c.tokens.list())["tokens"]}
    assert data(c.tokens.revoke(minted["token_id"]))["token"]["revoked_at"] is not None
    with Cairn(stack.base_url, minted["token"], transport=transport) as revoked, pytest.raises(Unauthorized):
        revoked.me()
    events = [data(e) for e in c.audit.iter(action="token.mint", limit=1)]
    assert minted["token_id"] in json.dumps(events)
    assert data(c.audit.list(limit=1))["events"]


def _structured(c: Cairn) -> None:
    name = uid("cl_note").replace("-", "_")  # structured names are stored with underscores
    row = data(c.structured.save(name, "Deploys go through CI.", description="How we deploy"))
    assert row["name"] == name
    assert data(c.structured.get(name))["content"] == "Deploys go through CI."
    assert name in {m["name"] for m in data(c.structured.list())["memories"]}
    assert data(c.structured.search("deploys"))["total"] >= 1
    assert data(c.admin.get_memory(row["memory_id"]))["name"] == name
    assert data(c.admin.update_memory(row["memory_id"], "New description"))["description"] == "New description"
    ops = [rev["op"] for rev in data(c.admin.memory_history(row["memory_id"]))["revisions"]]
    assert ops[0] == "save" and len(ops) >= 2, ops
    assert data(c.admin.list_memories())["total"] >= 1
    assert data(c.admin.search_memories("deploys"))["total"] >= 1
    imported = uid("cl_imported").replace("-", "_")
    line = {"name": imported, "description": "d", "content": "c", "scope": "global", "type": "reference"}
    assert data(c.admin.import_memories([line]))["imported"] == 1
    audit = [data(e) for e in c.admin.iter_memory_audit(limit=1)]
    assert len(audit) >= 2
    assert data(c.admin.memory_audit(limit=1))["events"]
    assert data(c.structured.delete(name)) == {"status": "ok", "name": name}
    imported_id = data(c.structured.get(imported))["memory_id"]
    assert data(c.admin.delete_memory(imported_id)) == {"status": "ok"}

    ws = data(c.workstreams.create("Migration", workstream_id=uid("ws")))["workstream_id"]
    data(c.workstreams.create("Second"))
    assert ws in {w["workstream_id"] for w in map(data, c.workstreams.iter(limit=1))}
    assert data(c.workstreams.list(limit=1))["workstreams"]
    project = data(c.projects.create("Apollo", project_id=uid("p")))["project_id"]
    data(c.projects.create("Gemini"))
    assert project in {p["project_id"] for p in map(data, c.projects.iter(limit=1))}
    assert data(c.projects.list(limit=1))["projects"]
    assert data(c.projects.update(project, active=True))["active"] is True
    assert data(c.projects.set_member(project, "gus", "read"))["access"] == "read"
    assert data(c.projects.remove_member(project, "gus")) == {"status": "ok"}
    session = data(c.sessions.create(workstream_id=ws, project_id=project))["session_id"]
    spare = data(c.sessions.create(workstream_id=ws))["session_id"]
    assert {session, spare} <= {s["session_id"] for s in map(data, c.sessions.iter(limit=1))}
    assert data(c.sessions.list(limit=1))["sessions"]
    saved = data(c.sessions.memory(session, "save", name="tea", content="User likes tea", description="drinks",
                                   scope="user"))
    assert saved["name"] == "tea"
    assert "system_message" in data(c.sessions.context(session, [{"role": "user", "content": "tea?"}]))
    assert data(c.sessions.delete(spare))["session_id"] == spare


def _team(c: Cairn, stack, transport: httpx.BaseTransport) -> None:
    carl_token = data(c.tokens.mint("person", user_id=uid("carl"), permissions=[]))
    carl_id = carl_token["user_id"]
    space = data(c.team.spaces.create(uid("Platform")))["id"]
    assert data(c.team.spaces.get(space))["id"] == space
    assert data(c.team.spaces.update(space, name=uid("Platform")))["id"] == space
    assert space in {s["id"] for s in map(data, c.team.spaces.iter(limit=1))}
    assert data(c.team.spaces.list(limit=1))["spaces"]
    for member in ("dev", carl_id):
        assert data(c.team.spaces.set_member(space, member, RW))["permissions"] == RW
    data(c.team.spaces.set_member(space, "frank", ["context:space:read"]))
    assert data(c.team.spaces.remove_member(space, "frank")) == {"removed": True}
    rules = data(c.team.deny_rules())["rules"]
    assert data(c.team.set_deny_rules(rules)) == {"rules": rules}

    with Cairn(stack.base_url, carl_token["token"], transport=transport) as carl:
        def draft(title: str, text: str) -> tuple[str, str]:
            eid = data(carl.team.entries.create(space, "decision", title))["id"]
            ed = Editor()
            ed.load(data(carl.team.entries.get(eid))["snapshot"])
            assert data(carl.team.entries.post_update(eid, uuid.uuid4().hex, b64(ed.insert(0, text))))[
                "duplicate"] is False
            return eid, data(carl.team.entries.get(eid))["documentSha256"]

        old, old_sha = draft("Use MySQL", "We use MySQL for everything.")
        new, new_sha = draft("Use Postgres", "We use Postgres for everything.")
        spare, _ = draft("Use Redis", "Redis for caching.")
    assert data(c.team.entries.update(spare, title="Use Redis for caching"))["title"] == "Use Redis for caching"
    assert data(c.team.entries.accept(old, old_sha))["status"] == "accepted"
    c.team.entries.accept(new, new_sha)
    assert data(c.team.entries.accepted(old))["documentSha256"] == old_sha
    assert data(c.team.entries.supersede(old, new))["supersededBy"] == new
    assert data(c.team.entries.archive(spare))["status"] == "archived"
    assert data(c.team.entries.history(old))["events"]
    assert "updates" in data(c.team.entries.updates(new, since_seq=0))
    ids = {e["id"] for e in map(data, c.team.entries.iter(space_id=space, limit=1))}
    assert {old, new, spare} <= ids
    assert data(c.team.entries.list(space_id=space, limit=1))["entries"]
    assert data(c.team.retrieve([space], "postgres"))["results"]
    assert "attributions" in data(c.team.attributions(space_id=space))


def test_every_operation_of_the_document_has_a_client_method_and_was_called(stack):
    """Each operationId of openapi.json maps to a method (sync and async alike), and one pass of the
    client over the stack calls every one of them."""
    doc = json.loads((ROOT / "openapi.json").read_text())
    documented = {op["operationId"] for item in doc["paths"].values() for m, op in item.items()
                  if m in ("get", "put", "post", "delete", "patch")}
    assert set(Cairn.operation_methods()) == documented
    assert AsyncCairn.operation_methods() == Cairn.operation_methods()

    recorder = Recorder()
    with Cairn(stack.base_url, stack.token, transport=recorder) as c:
        _service(c, stack, recorder)
        _banks_and_memories(c)
        _structured(c)
        _team(c, stack, recorder)
    assert set(recorder.seen) == documented, sorted(documented - set(recorder.seen))
    errors = {op: {s for s in codes if s >= 400} for op, codes in recorder.seen.items()}
    assert {op: s for op, s in errors.items() if s} == {"me": {401}}  # only the revoked token's probe failed


# --- errors -------------------------------------------------------------------------------------

def test_not_found_carries_status_code_message_and_request_id(cairn):
    with pytest.raises(NotFound) as caught:
        cairn.banks.get(uid("no-such-bank"))
    err = caught.value
    assert (err.status, err.code) == (404, "bank_not_found")
    assert err.message and re.fullmatch(r"[0-9a-f-]{8,}", err.request_id or ""), (err.message, err.request_id)


def test_conflict_and_unauthorized_map_to_their_classes(cairn, stack):
    bank = uid("cl-conflict")
    cairn.banks.create(bank)
    trashed_to = data(cairn.banks.trash(bank))["trashed_to"]
    cairn.banks.create(bank)  # the name is taken again
    with pytest.raises(Conflict) as caught:
        cairn.banks.restore(bank, trashed_to)
    assert caught.value.code == "bank_exists"
    with Cairn(stack.base_url, "cairn_not_a_token", max_retries=0) as stranger, pytest.raises(Unauthorized) as caught:
        stranger.me()
    assert caught.value.status == 401 and caught.value.code


def test_a_correction_is_one_call_and_a_retired_text_needs_revive(cairn):
    bank = uid("cl-fix")
    old = data(cairn.memories.save(bank, "The launch is planned for June 15"))["memory"]["id"]
    new = data(cairn.memories.save(bank, "The launch moved to July 20", supersedes=[old]))["memory"]["id"]
    assert data(cairn.memories.get(bank, old))["memory"]["superseded_by"] == new
    with pytest.raises(Conflict) as caught:
        cairn.memories.save(bank, "The launch is planned for June 15")
    assert caught.value.code == "memory_retired"
    assert caught.value.details == {"memory_id": old, "superseded_by": new,
                                    "invalid_at": data(cairn.memories.get(bank, old))["memory"]["invalid_at"]}
    back = data(cairn.memories.save(bank, "The launch is planned for June 15", revive=True))
    assert back["created"] is True and back["memory"]["id"] == old


# --- retries --------------------------------------------------------------------------------------

def test_a_save_retried_after_a_dropped_connection_reinforces_once(stack):
    """The stack applies the save, the connection drops before the answer: the client retries with
    the same Idempotency-Key, so the reinforcement counts once."""
    bank = uid("cl-drop")
    text = "The build host is called hopper"
    with Cairn(stack.base_url, stack.token) as plain:
        assert data(plain.memories.save(bank, text))["created"] is True
    before = stack.bank_seq(bank)
    drop = DropAfterForwarding("POST", f"/v1/banks/{bank}/memories")
    sleeps: list[float] = []
    with Cairn(stack.base_url, stack.token, transport=drop, sleep=sleeps.append) as c:
        again = data(c.memories.save(bank, text))
        mem = data(c.memories.get(bank, fingerprint(text)))["memory"]
    saves = [r for r in drop.sent if r.method == "POST"]
    assert len(saves) == 2 and len(sleeps) == 1
    assert saves[0].headers["Idempotency-Key"] == saves[1].headers["Idempotency-Key"]
    assert again["created"] is False and again["memory"]["corroboration"] == 1
    assert mem["corroboration"] == 1 and stack.bank_seq(bank) == before + 1


def test_without_a_key_a_dropped_post_is_not_retried(stack):
    """A create the server keeps no key for is never sent twice: the error reaches the caller."""
    drop = DropAfterForwarding("POST", "/v1/api/workstreams")
    with Cairn(stack.base_url, stack.token, transport=drop, sleep=lambda s: None) as c, pytest.raises(Exception) as e:
        c.workstreams.create("Once only")
    assert type(e.value).__name__ == "CairnConnectionError"
    assert len([r for r in drop.sent if r.method == "POST"]) == 1


def test_503_and_429_are_retried_after_their_retry_after(stack):
    faults = FirstAnswers([(503, {"Retry-After": "7"}), (429, {"Retry-After": "2"})])
    sleeps: list[float] = []
    with Cairn(stack.base_url, stack.token, transport=faults, sleep=sleeps.append) as c:
        assert data(c.me())["user_id"] == "dev"
    assert faults.sent == 3 and sleeps == [7.0, 2.0]


def test_retries_are_bounded(stack):
    faults = FirstAnswers([(503, {})] * 3)
    sleeps: list[float] = []
    with Cairn(stack.base_url, stack.token, transport=faults, sleep=sleeps.append, max_retries=2,
               backoff=1.0) as c, pytest.raises(ServiceUnavailable) as caught:
        c.me()
    assert faults.sent == 3 and len(sleeps) == 2 and caught.value.code == "unavailable"
    assert 0.5 <= sleeps[0] <= 1.0 and 1.0 <= sleeps[1] <= 2.0  # backoff doubles, jittered


class AsyncDropAfterForwarding(httpx.AsyncBaseTransport):
    """``DropAfterForwarding`` for the async client."""

    def __init__(self, method: str, path_suffix: str) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.method, self.suffix, self.drops = method, path_suffix, 1
        self.keys: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if request.method == self.method and request.url.path.endswith(self.suffix):
            self.keys.append(request.headers["Idempotency-Key"])
            if self.drops:
                self.drops -= 1
                await response.aread()
                await response.aclose()
                raise httpx.ReadError("connection reset", request=request)
        return response


def test_the_async_client_retries_a_dropped_save_once_too(stack):
    bank, text = uid("cl-adrop"), "The async build host is called lovelace"
    drop = AsyncDropAfterForwarding("POST", f"/v1/banks/{bank}/memories")
    sleeps: list[float] = []

    async def nap(seconds: float) -> None:
        sleeps.append(seconds)

    async def run() -> dict[str, Any]:
        async with AsyncCairn(stack.base_url, stack.token, transport=drop, sleep=nap) as c:
            await c.memories.save(bank, text)
            await c.memories.save(bank, text)
            return data(await c.memories.get(bank, fingerprint(text)))["memory"]

    mem = asyncio.run(run())
    assert len(drop.keys) == 3 and drop.keys[0] == drop.keys[1] != drop.keys[2] and len(sleeps) == 1
    assert (mem["revision"], mem["corroboration"]) == (1, 1)  # created once, reinforced once


# --- export and import ------------------------------------------------------------------------------

def test_export_to_a_file_and_import_it_with_progress(cairn, tmp_path, capsys):
    src, dst = uid("cl-exp"), uid("cl-imp")
    for i in range(5):
        cairn.memories.save(src, f"Exported fact number {i}")
    path = tmp_path / "memories.jsonl"
    n = cairn.banks.export(src, path, progress=True)
    assert n == path.stat().st_size and len(path.read_bytes().splitlines()) == 5
    assert data(cairn.banks.import_(dst, path, progress=True, upload=True))["imported"] == 5
    assert "export" in capsys.readouterr().err  # the tqdm bar went to stderr
    with pytest.raises(NotFound) as caught:
        cairn.banks.export(uid("cl-missing"), tmp_path / "missing.jsonl")
    assert caught.value.code == "bank_not_found" and (tmp_path / "missing.jsonl").read_bytes() == b""
    assert sorted(m["text"] for m in map(data, cairn.memories.iter(dst))) == [
        f"Exported fact number {i}" for i in range(5)]


def test_a_large_export_downloads_from_its_presigned_url(tmp_path, capsys):
    """A stack whose inline export limit is tiny answers ``{url, expires_at}``: the client follows the
    URL (S3 on moto, no token sent there) into the file, with a progress bar."""
    stack = LocalStack(tmp_path / "state", DEV_TOKEN, tmp_path / "stack.log",
                       env={"CAIRN_EXPORT_INLINE_BYTES": "64"}).start()
    seen = Recorder()
    try:
        with Cairn(stack.base_url, stack.token, transport=seen) as c:
            c.banks.import_("big", [{"text": f"Large export fact number {i}"} for i in range(20)])
            path = tmp_path / "big.jsonl"
            assert c.banks.export("big", path, progress=True) == path.stat().st_size > 64
            assert len(path.read_bytes().splitlines()) == 20
            assert b"".join(sorted(path.read_bytes().splitlines())) == b"".join(
                sorted(c.banks.export("big").splitlines()))
        to_s3 = [r for r in seen.requests if r.url.port == stack.moto_port]
        assert [r.method for r in to_s3] == ["GET", "GET"] and not any("authorization" in r.headers for r in to_s3)
    finally:
        assert stack.stop() == 0, (tmp_path / "stack.log").read_text()[-3000:]
    assert "export big" in capsys.readouterr().err


def test_iterators_follow_each_listings_cursor_page_after_page(stack):
    """``memories.iter`` (``next_cursor``) and ``team.entries.iter`` (``cursor``) request every page."""
    bank = uid("cl-pages")
    seen = Recorder()
    with Cairn(stack.base_url, stack.token, transport=seen) as c:
        c.banks.import_(bank, [{"text": f"Paged fact number {i}"} for i in range(5)])
        texts = [data(m)["text"] for m in c.memories.iter(bank, limit=2)]
        pages = [r for r in seen.requests if r.url.path.endswith(f"/{bank}/memories")]
        space = data(c.team.spaces.create(uid("Paged")))["id"]
        c.team.spaces.set_member(space, "dev", RW)
        made = {data(c.team.entries.create(space, "decision", f"Paged entry {i}"))["id"] for i in range(3)}
        listed = {data(e)["id"] for e in c.team.entries.iter(space_id=space, limit=1)}
    assert sorted(texts) == sorted(f"Paged fact number {i}" for i in range(5))
    assert [r.url.params.get("cursor") is None for r in pages] == [True, False, False]
    assert listed == made
    entry_pages = [r for r in seen.requests if r.url.path.endswith("/memory/entries") and r.method == "GET"]
    assert len(entry_pages) >= 3


# --- async --------------------------------------------------------------------------------------

def test_async_client_saves_iterates_and_maps_errors(stack):
    bank = uid("cl-async")

    async def run() -> tuple[list[str], int, str | None]:
        async with AsyncCairn(stack.base_url, stack.token) as c:
            await asyncio.gather(*(c.memories.save(bank, f"Async fact {i}") for i in range(3)))
            texts = [data(m)["text"] async for m in c.memories.iter(bank, limit=1)]
            try:
                await c.memories.get(bank, "0" * 64)
            except NotFound as err:
                return texts, err.status, err.code
        return texts, 0, None

    texts, status, code = asyncio.run(run())
    assert sorted(texts) == ["Async fact 0", "Async fact 1", "Async fact 2"]
    assert status == 404 and code == "memory_not_found"


# --- the documented snippets ---------------------------------------------------------------------

def _client_snippets() -> list[tuple[str, str]]:
    """``(file, code)`` of each fenced Python block that imports the client, in the client's README
    and the repository's."""
    found = []
    for readme in (ROOT / "clients" / "python" / "README.md", ROOT / "README.md"):
        for code in re.findall(r"```python\n(.*?)```", readme.read_text(), flags=re.S):
            if "cairn_client" in code:
                found.append((readme.relative_to(ROOT).as_posix(), code))
    return found


def test_the_readme_snippets_run_against_the_stack(stack, tmp_path):
    """Each snippet runs as a user would run it: a fresh interpreter, $CAIRN_URL and $CAIRN_TOKEN."""
    snippets = _client_snippets()
    assert snippets, "clients/python/README.md shows no client snippet"
    env = {**os.environ, "CAIRN_URL": stack.base_url, "CAIRN_TOKEN": stack.token}
    for where, code in snippets:
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, f"{where} snippet failed:\n{code}\n{done.stderr[-2000:]}"
    with Cairn(stack.base_url, stack.token) as c:
        assert data(c.memories.get("main", fingerprint("User prefers tea")))["memory"]
