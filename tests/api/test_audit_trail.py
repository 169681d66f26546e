"""The audit trail is complete: every write route of the app's route table, every MCP tool, every
command of the command-line tool and every event handler, sent by someone allowed to, either
changes nothing an org holds or leaves an audit event naming its actor (a job: a ``system:``
actor acting ``on_behalf_of`` its sender).

Rows come from the app itself (``app.routes`` without GET, the MCP registry, the CLI's parser, the
app's event sources); each route's request is its fixture in tests/api/route_fixtures.py (a row
without one fails here). The backend is read whole before and after each call (every item of
every table, every S3 object): a change is any item or object added, removed or changed, except
what a call does beside its purpose (``BESIDE``: the trail itself, usage counters, rate windows,
idempotency records, read counters, the record of what a retrieval served, a turn's nudges, an
extraction job's progress and parking, index snapshots, the export a read wrote, the service
secret). A write that changed something and left no event naming its actor fails its row.
"""

from __future__ import annotations

import getpass
import hashlib
import io
import json
import os
import tempfile
from typing import Any

import pytest
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends

from infra.local import motolock
from infra.local.resources import create_resources
from tests.api.conftest import Api, mint
from tests.api.route_fixtures import MCP, MCP_ROW, MCP_TOOLS, ROUTES, World, app_routes, mcp_status, tool_rows
from tests.api.state import is_version_name, plain

STACK = "cairn-audittrail"
ACTOR = "person:alice"  # the world's own admin, who sends every row
ROWS = {**ROUTES, **MCP_TOOLS}

# What a call changes beside its purpose: (table, a predicate on the item) or an S3 key part.
BESIDE_TABLES = {"audit", "usage", "team_rates", "team_attributions", "idempotency"}
BESIDE_ATTRS = {"tokens": {"last_used_at"}, "structured": {"access_count", "last_accessed"},
                "banks": {"snapshot_seq", "snapshot_key", "snapshot_at"}}  # the newest snapshot noted


def _beside(table: str, item: dict[str, Any]) -> bool:
    if table in BESIDE_TABLES:
        return True
    if table == "structured":  # a context turn's nudge markers
        return item["sk"].startswith("nudge#")
    if table == "extraction":  # a job's progress and parking: the queue's state, not the org's data
        return item["sk"].startswith(("job#", "parked#"))
    if table == "banks":  # the service secret, made by the first keyed digest
        return item["org_id"] == "_system" and item["name"] == "!secret"
    return False


BESIDE_OBJECTS = ("/indexes/", "/exports/", "/imports/")  # derived snapshots, a read's file, uploads


def backend(prefix: str, bucket: str) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """``({place: digest of what is there}, [audit items])`` of the whole in-process backend, the
    ``BESIDE`` parts left out of the first."""
    from moto.s3.models import s3_backends
    state: dict[str, str] = {}
    events: list[dict[str, Any]] = []
    with motolock.lock():
        for name, table in dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].tables.items():
            logical = name[len(prefix):]
            keys = [k for k in (table.hash_key_attr, table.range_key_attr) if k]
            for it in table.all_items():
                item = {k: plain(v) for k, v in it.attrs.items()}
                if logical == "audit":
                    events.append(item)
                if _beside(logical, item) or (logical == "banks" and is_version_name(item.get("name"))):
                    continue  # a version item moves with any acknowledged write call (tests/api/state.py)
                kept = {k: v for k, v in item.items() if k not in BESIDE_ATTRS.get(logical, ())}
                place = f"{logical}|" + "|".join(str(item[k]) for k in keys)
                state[place] = hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()
        objects = s3_backends[DEFAULT_ACCOUNT_ID]["global"].buckets[bucket].keys
        for key in list(objects.keys()):
            if not any(part in f"/{key}" for part in BESIDE_OBJECTS):
                state[f"s3|{key}"] = hashlib.sha256(objects[key].value).hexdigest()
    return state, events


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


def new_events(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events added or counted again (an aggregated one) between two reads."""
    seen = {json.dumps(e, sort_keys=True, default=str) for e in before}
    return [e for e in after if json.dumps(e, sort_keys=True, default=str) not in seen]


def names(events: list[dict[str, Any]], actor: str, system: str | None = None) -> bool:
    """Whether one of ``events`` names ``actor``, or the job actor ``system`` acting for it."""
    for e in events:
        if e.get("actor") == actor:
            return True
        if system is not None and e.get("actor") == system and (e.get("details") or {}).get("on_behalf_of") == actor:
            return True
    return False


class Trail:
    """The world, its backend's names and a check of one call."""

    def __init__(self, client, env: dict[str, str]):
        self.client = client
        self.prefix, self.bucket = env["CAIRN_TABLE_PREFIX"], env["CAIRN_BUCKET"]
        self.queue = env["CAIRN_QUEUE_URL"]
        self.world = World(Api(client, mint(org="acme", user_id="alice")), org="acme", user="alice")

    def state(self) -> tuple[dict[str, str], list[dict[str, Any]]]:
        return backend(self.prefix, self.bucket)

    def check(self, what: str, run, actor: str | tuple[str, ...], system: str | None = None) -> list[str]:
        """Run ``run()``; the problems: a change without an event naming ``actor`` (one of them)."""
        before, events_before = self.state()
        run()
        after, events_after = self.state()
        diff = changed(before, after)
        fresh = new_events(events_before, events_after)
        actors = (actor,) if isinstance(actor, str) else actor
        if diff and not any(names(fresh, a, system) for a in actors):
            return [f"{what} changed {diff[:6]} and left no audit event naming {actors}: "
                    f"{[(e.get('action'), e.get('actor')) for e in fresh]}"]
        return []


@pytest.fixture(scope="module")
def trail():
    keep = dict(os.environ)
    with mock_aws():
        env = create_resources(STACK)
        os.environ.update(env)
        os.environ.update({"CAIRN_STAGE": "test", "CAIRN_QUEUE_URL": "", "CAIRN_EXTRACTOR": "offline",
                           "CAIRN_RATE_REQUESTS_PER_MINUTE": "0", "CAIRN_QUOTA_BANKS_PER_ORG": "100000"})
        from chalice.test import Client

        from app import app
        from chalicelib.storage import secret
        secret.forget_cached()
        with Client(app) as client:
            yield Trail(client, env)
    os.environ.clear()
    os.environ.update(keep)


# --- routes and MCP tools ---------------------------------------------------------------------

def _write_rows() -> list[tuple[tuple[str, str], str | None]]:
    from app import app
    rows = []
    for route in [*app_routes(app), *tool_rows()]:
        if route[0] == "GET":
            continue
        rows += [(route, v) for v in ROWS.get(route, {})] or [(route, None)]
    return rows


@pytest.mark.parametrize("route,variant", _write_rows(), ids=lambda x: x if isinstance(x, str) else " ".join(x))
def test_a_write_leaves_an_event_naming_its_actor(trail, route, variant):
    build = ROWS.get(route, {}).get(variant) if variant else None
    assert build is not None, f"{route} has no request fixture in tests/api/route_fixtures.py"
    call = build(trail.world)
    if call.expect is not None:
        pytest.skip("a probe of a refusal: the isolation matrix checks it writes nothing")
    got: list[tuple[int, Any]] = []

    def send() -> None:
        headers = {"Content-Type": call.content_type or "application/x-ndjson"} if call.raw is not None else None
        s, b = trail.world.api.call("POST" if route[0] == MCP_ROW else route[0], call.url, call.body,
                                    raw=call.raw, headers=headers)
        got.append((mcp_status(s, b) if call.path == MCP else s, b))

    problems = trail.check(f"{route[0]} {route[1]} #{variant}", send, ACTOR, system="system:extraction")
    status, body = got[0]
    assert 200 <= status < 300, (status, body)
    assert problems == []


# --- the command-line tool ----------------------------------------------------------------------

def _ndjson(text: str) -> str:
    fd, path = tempfile.mkstemp(suffix=".jsonl")
    with os.fdopen(fd, "w") as fh:
        fh.write(json.dumps({"text": text}) + "\n")
    return path


# each command's arguments (every subcommand of the parser has a row: a new one must be added)
CLI_CALLS = {
    "export": lambda: ["export", "--org", "acme", "--bank", "main", "-o", os.devnull],
    "import": lambda: ["import", "--org", "acme", "--bank", "main", _ndjson("Imported by the operator")],
    "mint-token": lambda: ["mint-token", "--org", "acme", "--kind", "api_key", "--permissions", "memory:read"],
    "rebuild-indexes": lambda: ["rebuild-indexes", "--org", "acme", "--bank", "main"],
    "backfill-vectors": lambda: _backfill_argv(),
    "limits": lambda: ["limits", "set", "--org", "acme", "--burst", "500"],
    "usage": lambda: ["usage", "--org", "acme", "--format", "json"],
    "doctor": lambda: ["doctor"],
}


# the job actor of a command that runs a job for its operator (``on_behalf_of`` names the operator)
CLI_SYSTEM = {"backfill-vectors": "system:backfill"}


def _without_model_saved(text: str) -> None:
    """Save ``text`` to acme's bank ``main`` as a deployment without the model does (no vector),
    so a backfill has work to do."""
    from chalicelib import semantic
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    saved = semantic._model, semantic._failed
    semantic._model, semantic._failed = None, "FileNotFoundError: no model in this test"
    try:
        service.save_memory("acme", "main", SaveRequest(text=text), actor=ACTOR)
    finally:
        semantic._model, semantic._failed = saved


def _backfill_argv() -> list[str]:
    _without_model_saved("Saved while the model was missing, for the CLI")
    return ["backfill-vectors", "--org", "acme", "--bank", "main"]


def _cli_commands() -> list[str]:
    from chalicelib.cli import build_parser
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return sorted(sub.choices)


@pytest.mark.parametrize("command", _cli_commands())
def test_a_cli_command_leaves_an_event_naming_its_operator(trail, command):
    from chalicelib import cli
    assert command in CLI_CALLS, f"the CLI command {command!r} has no row in CLI_CALLS"
    argv = CLI_CALLS[command]()
    status: list[int] = []
    user = getpass.getuser()
    problems = trail.check(f"cli {command}", lambda: status.append(
        cli.main(["--stage", "dev", *argv], out=io.StringIO(), err=io.StringIO())), (f"cli:{user}", f"operator:{user}"),
        CLI_SYSTEM.get(command))
    assert status == [0]
    assert problems == []


# --- event handlers -----------------------------------------------------------------------------

def _turn_job(session: str, turn: str, fact: str) -> str:
    from chalicelib.extraction.job import make_job
    return make_job("acme", "main", session, turn, [{"role": "user", "content": f"Remember that {fact}."}],
                    actor=ACTOR, window_size=20).model_dump_json()


def _handler_calls(trail: Trail):
    """``{handler name: (run, actor, system)}``: a call of each event handler that does its work."""
    import boto3

    from app import app
    from chalicelib.extraction import store as xstore
    from chalicelib.storage import blobs
    from chalicelib.usage import extraction as usage_x
    from infra.local.events import LocalEvents
    loops = LocalEvents(app, queue_url=trail.queue, bucket=trail.bucket, log=lambda msg: None)
    sqs = boto3.client("sqs", region_name="us-east-1")

    def queued() -> None:
        sqs.send_message(QueueUrl=trail.queue, MessageBody=_turn_job("hq", "t1", "the build runs at night"),
                         MessageGroupId="g", MessageDeduplicationId="d")
        assert loops.poll_queue()["received"] == 1

    def hand_edit() -> None:
        loops.watch_objects()  # the baseline
        blobs.put_text("acme/banks/main/rules/by-hand.md", "Edited in the bucket.")
        assert [r["action"] for r in loops.watch_objects()] == ["rules_reloaded"]

    def resumed() -> None:  # a job parked past a daily quota, due today
        xstore.park("acme", "hp", xstore.parked_sk(1, 1, "t1"), _turn_job("hp", "t1", "the release is on Friday"))
        usage_x.put_pointer("acme", xstore.session_key("acme", "hp"), "19700101")
        schedule("resume_deferred_extraction")()

    def schedule(name: str):
        event = {"version": "0", "id": "e", "detail-type": "Scheduled Event", "source": "aws.events",
                 "account": "123456789012", "time": "2026-01-01T00:00:00Z", "region": "us-east-1",
                 "resources": [f"arn:aws:events:us-east-1:123456789012:rule/{name}"], "detail": {}}
        return lambda: loops._invoke(name, event)

    def backfilled() -> None:  # a memory saved without the model, then the schedule's run
        _without_model_saved("Saved while the model was missing, for the schedule")
        schedule("backfill_vectors")()

    calls = {"run_extraction": (queued, ACTOR, "system:extraction"),
             "backfill_vectors": (backfilled, "system:backfill", None),
             "s3_object_changed": (hand_edit, "system:reload", None),
             "resume_deferred_extraction": (resumed, ACTOR, "system:extraction")}
    for name in loops.schedule_handlers:
        calls.setdefault(name, (schedule(name), "system:", None))
    return calls, [s.name for s in app.event_sources]


def test_every_event_handler_leaves_an_event_naming_its_actor(trail):
    calls, handlers = _handler_calls(trail)
    assert set(handlers) <= set(calls), f"event handlers without a call here: {set(handlers) - set(calls)}"
    problems = []
    for name in handlers:
        run, actor, system = calls[name]
        problems += trail.check(f"handler {name}", run, actor, system)
    assert problems == []
