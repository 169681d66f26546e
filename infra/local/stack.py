"""The local stack behind ``make run`` (issue 2, item 2): ``python -m infra.local.stack``.

One process runs moto's server on loopback (DynamoDB, S3, SQS) with ``motolock`` installed,
creates the template's resources (``infra.local.resources``), restores the saved state, mints the
dev admin token, and runs ``chalice local`` as a child process pointed at moto (through
``infra.local.chalice_local``, which only raises the server's listen backlog). It prints the base
URL and the token, then "ready" once the API answers. SIGINT/SIGTERM stop the child, save the
state one last time and stop moto.

Persistence (README, "Local stack"): an export on stop and an import on start. Every DynamoDB item
(scanned through boto3 against moto) and every S3 object are written to
``<state dir>/state.tar.gz`` (write a temp file, then rename), on stop and every
``SAVE_INTERVAL_S`` seconds when a write happened since the last save. A save is only kept when
no write landed while it was being read (a consistent cut; otherwise it is retried next tick).
On start the tables are loaded with ``batch_write_item`` in batches of 25 and the objects put
back. SQS messages are not kept. ``--fresh`` starts empty (the old state is overwritten on the
first save).

Extension point: the launcher runs ``Worker`` threads (``Stack.workers``); the state saver is the
first. Issue 6 adds the SQS poller, the schedule timer and the rule-ETag watcher the same way:
``Worker(name, tick, interval_s)`` calling the app's event handlers.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import tarfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import boto3
import requests
from botocore.config import Config

from . import motolock, runfile
from .resources import create_resources

ROOT = Path(__file__).resolve().parent.parent.parent
STACK = "cairn-local"
REGION = "us-east-1"
DEFAULT_PORT = 8000
DEFAULT_MOTO_PORT = 5005
DEFAULT_STATE_DIR = ".cairn-local"
STATE_FILE = "state.tar.gz"
TOKEN_FILE = "dev-token"
SAVE_INTERVAL_S = 5.0
READY_TIMEOUT_S = 90.0
FAKE_CREDS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": REGION}


def log(msg: str) -> None:
    """One launcher line on stderr (stdout carries the URL, token and "ready")."""
    print(f"[cairn-local] {msg}", file=sys.stderr, flush=True)


# --- change tracking ------------------------------------------------------------------------

class Changes:
    """A counter of writes that reached moto (DynamoDB and S3), so the saver knows when a save is
    due and whether a write interleaved with one. Wraps moto's backend methods in this process."""

    DDB = ("put_item", "update_item", "delete_item", "transact_write_items", "create_table",
           "delete_table", "update_table")
    S3 = ("put_object", "delete_object", "delete_objects", "copy_object", "complete_multipart_upload",
          "create_bucket", "delete_bucket", "put_object_tagging")

    def __init__(self) -> None:
        self._n = 0
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        """Writes seen so far."""
        return self._n

    def bump(self) -> None:
        """Record one write."""
        with self._lock:
            self._n += 1

    def install(self) -> None:
        """Wrap the write methods of moto's DynamoDB and S3 backends (call before serving)."""
        from moto.dynamodb.models import DynamoDBBackend
        from moto.s3.models import S3Backend

        for cls, methods in ((DynamoDBBackend, self.DDB), (S3Backend, self.S3)):
            for name in methods:
                original = getattr(cls, name, None)
                if original is None:
                    continue

                def counted(backend, *args, __original=original, **kwargs):
                    try:
                        return __original(backend, *args, **kwargs)
                    finally:
                        self.bump()

                counted.__name__ = name
                setattr(cls, name, counted)


# --- state export / import ------------------------------------------------------------------

def _encode(value: Any) -> Any:
    """DynamoDB JSON from boto3 -> plain JSON (binary values as base64 under ``B``/``BS``)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "B":
                out[k] = base64.b64encode(bytes(v)).decode()
            elif k == "BS":
                out[k] = [base64.b64encode(bytes(b)).decode() for b in v]
            else:
                out[k] = _encode(v)
        return out
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    """Inverse of ``_encode``."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "B" and isinstance(v, str):
                out[k] = base64.b64decode(v)
            elif k == "BS" and isinstance(v, list):
                out[k] = [base64.b64decode(b) for b in v]
            else:
                out[k] = _decode(v)
        return out
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(time.time())
    tar.addfile(info, io.BytesIO(data))


class StateStore:
    """Saves and loads the moto backend's DynamoDB items and S3 objects as one tar.gz file.

    Layout inside the archive: ``dynamodb/<table>.jsonl`` (one item per line, DynamoDB JSON),
    ``s3/index.jsonl`` (``{bucket, key, content_type, member}`` per object) and the object bodies
    as ``s3/objects/<n>``.
    """

    def __init__(self, state_dir: Path, endpoint_url: str, changes: Changes | None = None) -> None:
        self.path = state_dir / STATE_FILE
        self.state_dir = state_dir
        self.changes = changes
        cfg = Config(retries={"mode": "standard", "max_attempts": 5})
        self.ddb = boto3.client("dynamodb", region_name=REGION, endpoint_url=endpoint_url, config=cfg)
        self.s3 = boto3.client("s3", region_name=REGION, endpoint_url=endpoint_url, config=cfg)
        self._save_lock = threading.Lock()

    def _table_names(self) -> list[str]:
        names: list[str] = []
        for page in self.ddb.get_paginator("list_tables").paginate():
            names.extend(page.get("TableNames", []))
        return sorted(names)

    def _snapshot(self) -> bytes:
        """The archive bytes of the backend's current content."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
            for table in self._table_names():
                lines = []
                for page in self.ddb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
                    lines.extend(json.dumps(_encode(item), separators=(",", ":")) for item in page.get("Items", []))
                _add(tar, f"dynamodb/{table}.jsonl", ("\n".join(lines) + "\n" if lines else "").encode())
            index = []
            for bucket in sorted(b["Name"] for b in self.s3.list_buckets().get("Buckets", [])):
                for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
                    for obj in page.get("Contents", []):
                        got = self.s3.get_object(Bucket=bucket, Key=obj["Key"])
                        member = f"s3/objects/{len(index)}"
                        _add(tar, member, got["Body"].read())
                        index.append({"bucket": bucket, "key": obj["Key"], "member": member,
                                      "content_type": got.get("ContentType", "binary/octet-stream")})
            _add(tar, "s3/index.jsonl", "".join(json.dumps(e) + "\n" for e in index).encode())
        return buf.getvalue()

    def save(self, attempts: int = 5) -> bool:
        """Write a consistent snapshot atomically (temp file, then rename). Returns False when
        writes kept landing during every attempt (nothing written; the caller retries later)."""
        with self._save_lock:
            for _ in range(attempts):
                before = self.changes.count if self.changes else 0
                data = self._snapshot()
                if self.changes is None or self.changes.count == before:
                    self.state_dir.mkdir(parents=True, exist_ok=True)
                    tmp = self.path.with_name(f".{STATE_FILE}.{os.getpid()}.tmp")
                    with open(tmp, "wb") as fh:
                        fh.write(data)
                        fh.flush()
                        os.fsync(fh.fileno())
                    os.replace(tmp, self.path)
                    return True
            return False

    def load(self) -> dict[str, int]:
        """Put the saved items and objects back (tables and bucket must exist or are created for
        objects). Returns ``{"items": n, "objects": m}``; an absent file loads nothing."""
        if not self.path.exists():
            return {"items": 0, "objects": 0}
        existing = set(self._table_names())
        items = objects = 0
        with tarfile.open(self.path, mode="r:gz") as tar:
            for member in tar.getmembers():
                if not (member.name.startswith("dynamodb/") and member.name.endswith(".jsonl")):
                    continue
                table = member.name[len("dynamodb/"):-len(".jsonl")]
                if table not in existing:
                    log(f"skipping saved table {table}: the template no longer declares it")
                    continue
                rows = [_decode(json.loads(line)) for line in tar.extractfile(member).read().decode().splitlines()
                        if line.strip()]
                for i in range(0, len(rows), 25):
                    self._batch_put(table, rows[i:i + 25])
                items += len(rows)
            index_member = tar.extractfile("s3/index.jsonl") if "s3/index.jsonl" in tar.getnames() else None
            buckets: set[str] = {b["Name"] for b in self.s3.list_buckets().get("Buckets", [])}
            for line in (index_member.read().decode().splitlines() if index_member else []):
                if not line.strip():
                    continue
                entry = json.loads(line)
                if entry["bucket"] not in buckets:
                    self.s3.create_bucket(Bucket=entry["bucket"])
                    buckets.add(entry["bucket"])
                body = tar.extractfile(entry["member"]).read()
                self.s3.put_object(Bucket=entry["bucket"], Key=entry["key"], Body=body,
                                   ContentType=entry["content_type"])
                objects += 1
        return {"items": items, "objects": objects}

    def _batch_put(self, table: str, rows: list[dict[str, Any]]) -> None:
        request = {table: [{"PutRequest": {"Item": row}} for row in rows]}
        for attempt in range(20):
            left = self.ddb.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}
            if not left:
                return
            request = left
            time.sleep(min(0.05 * 2 ** attempt, 1.0))
        raise RuntimeError(f"could not load {table}: items stayed unprocessed")


# --- background workers ---------------------------------------------------------------------

@dataclass
class Worker:
    """A launcher thread that calls ``tick()`` every ``interval_s`` until the stack stops.
    ``final`` (optional) runs once on stop. Exceptions are logged, never fatal."""

    name: str
    tick: Callable[[], None]
    interval_s: float
    final: Callable[[], None] | None = None
    thread: threading.Thread | None = field(default=None, repr=False)

    def start(self, stop: threading.Event) -> None:
        """Start the daemon thread."""
        def loop() -> None:
            while not stop.wait(self.interval_s):
                try:
                    self.tick()
                except Exception as exc:  # noqa: BLE001 - a failed tick must not kill the stack
                    log(f"{self.name}: {type(exc).__name__}: {exc}")
        self.thread = threading.Thread(target=loop, name=f"cairn-{self.name}", daemon=True)
        self.thread.start()


def saver_worker(store: StateStore, changes: Changes) -> Worker:
    """Saves the state every ``SAVE_INTERVAL_S`` when something changed since the last save."""
    saved = {"at": changes.count}

    def tick() -> None:
        now = changes.count
        # One attempt per tick: under sustained writes the save waits for a quieter tick (the
        # save on stop always succeeds, nothing writes then).
        if now != saved["at"] and store.save(attempts=1):
            saved["at"] = now

    return Worker("state-saver", tick, SAVE_INTERVAL_S)


# --- the stack ------------------------------------------------------------------------------

def _free_port(port: int) -> bool:
    import socket
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do: TIME_WAIT is fine
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class Stack:
    """Starts and stops everything ``make run`` runs. ``start()`` returns once the API answers;
    ``stop()`` is idempotent."""

    def __init__(self, *, port: int, moto_port: int, state_dir: Path, fresh: bool, dev_token: str | None) -> None:
        self.port, self.moto_port = port, moto_port
        self.state_dir = state_dir
        self.fresh = fresh
        self.dev_token = dev_token
        self.endpoint = f"http://127.0.0.1:{moto_port}"
        self.base_url = f"http://127.0.0.1:{port}"
        self.changes = Changes()
        self.stop_event = threading.Event()
        self.workers: list[Worker] = []
        self.server = None
        self.chalice: subprocess.Popen | None = None
        self.store: StateStore | None = None
        self.env: dict[str, str] = {}
        self._stopped = False

    def _token(self) -> str:
        """CAIRN_DEV_TOKEN, else the one saved in the state dir, else a new random one."""
        if self.dev_token:
            return self.dev_token
        path = self.state_dir / TOKEN_FILE
        if path.exists() and not self.fresh:
            saved = path.read_text().strip()
            if saved:
                return saved
        token = "cairn_dev_" + secrets.token_urlsafe(24)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(token + "\n")
        path.chmod(0o600)
        return token

    def start(self) -> str:
        """Bring the stack up; returns the admin token."""
        from moto.server import ThreadedMotoServer

        from .preflight import problems
        errors, warnings = problems()
        for warning in warnings:
            log(f"WARNING: {warning}")
        if errors:
            raise SystemExit("refusing to start: " + "; ".join(errors))
        for p in (self.port, self.moto_port):
            if not _free_port(p):
                raise SystemExit(f"port {p} on 127.0.0.1 is in use (set CAIRN_PORT / CAIRN_MOTO_PORT)")
        motolock.install()  # before serving: moto's transactions are not thread-safe
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's per-request lines
        self.changes.install()
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.moto_port, verbose=False)
        self.server.start()
        log(f"moto on {self.endpoint}")

        os.environ.update(FAKE_CREDS)
        os.environ["AWS_ENDPOINT_URL"] = self.endpoint
        for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3"):
            os.environ.pop(var, None)
        names = create_resources(STACK, region=REGION, endpoint_url=self.endpoint)
        self.store = StateStore(self.state_dir, self.endpoint, self.changes)
        if self.fresh:
            log("--fresh: starting empty")
        else:
            loaded = self.store.load()
            if loaded["items"] or loaded["objects"]:
                log(f"restored {loaded['items']} items and {loaded['objects']} objects from {self.store.path}")
        os.environ.update(names)
        os.environ["CAIRN_STAGE"] = "local"

        token = self._token()
        from chalicelib.auth.principal import PERMISSIONS
        from chalicelib.auth.tokens import MintRequest, mint
        mint("default", MintRequest(kind="person", user_id="dev", permissions=list(PERMISSIONS), label="dev admin"),
             created_by="local-stack", token=token)

        self.env = {**os.environ, **names, "AWS_ENDPOINT_URL": self.endpoint, "PYTHONUNBUFFERED": "1"}
        # `chalice local` through a wrapper that only raises its listen backlog (chalice_local.py).
        cmd = [sys.executable, "-m", "infra.local.chalice_local", "local", "--host", "127.0.0.1",
               "--port", str(self.port), "--stage", "local", "--no-autoreload"]
        self.chalice = subprocess.Popen(cmd, cwd=ROOT, env=self.env, start_new_session=True)
        self._wait_ready(token)

        runfile.write(self.state_dir, port=self.port, moto_port=self.moto_port)  # for the CLI's --stage local
        self.workers.append(saver_worker(self.store, self.changes))
        # Issue 6: the SQS poller, schedule timer and rule-ETag watcher call app.py's own handlers
        from app import app as chalice_app

        from .events import LocalEvents
        self.workers += LocalEvents(chalice_app, log=log).workers()
        for worker in self.workers:
            worker.start(self.stop_event)
        return token

    def _wait_ready(self, token: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.stop_event.is_set():
                raise SystemExit("stopped before the API was ready")
            if self.chalice.poll() is not None:
                raise SystemExit(f"chalice local exited with status {self.chalice.returncode}")
            try:
                r = requests.get(f"{self.base_url}/v1/banks", headers={"Authorization": f"Bearer {token}"},
                                 timeout=2)
                if r.status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise SystemExit(f"the API did not answer on {self.base_url} within {READY_TIMEOUT_S:.0f} s")

    def stop(self) -> None:
        """Stop the child, run workers' ``final``, save the state, stop moto."""
        if self._stopped:
            return
        self._stopped = True
        runfile.remove(self.state_dir)
        self.stop_event.set()
        if self.chalice is not None and self.chalice.poll() is None:
            try:
                os.killpg(self.chalice.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.chalice.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.chalice.pid, signal.SIGKILL)
                self.chalice.wait()
        for worker in self.workers:
            if worker.thread is not None:
                worker.thread.join(timeout=30)
            if worker.final is not None:
                try:
                    worker.final()
                except Exception as exc:  # noqa: BLE001
                    log(f"{worker.name}: {type(exc).__name__}: {exc}")
        if self.store is not None and self.server is not None:
            if self.store.save(attempts=20):
                log(f"state saved to {self.store.path}")
            else:
                log("WARNING: state could not be saved (writes kept landing)")
        if self.server is not None:
            self.server.stop()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options; defaults come from CAIRN_PORT, CAIRN_MOTO_PORT, CAIRN_STATE_DIR."""
    p = argparse.ArgumentParser(prog="python -m infra.local.stack", description="Run Cairn's local stack.")
    p.add_argument("--port", type=int, default=int(os.environ.get("CAIRN_PORT", DEFAULT_PORT)),
                   help="API port (CAIRN_PORT, default 8000)")
    p.add_argument("--moto-port", type=int, default=int(os.environ.get("CAIRN_MOTO_PORT", DEFAULT_MOTO_PORT)),
                   help="moto server port (CAIRN_MOTO_PORT, default 5005)")
    p.add_argument("--state-dir", type=Path, default=Path(os.environ.get("CAIRN_STATE_DIR", DEFAULT_STATE_DIR)),
                   help="where the state is saved (CAIRN_STATE_DIR, default .cairn-local/)")
    p.add_argument("--fresh", action="store_true", help="start empty, ignoring the saved state")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run until SIGINT/SIGTERM or until chalice local exits; returns the exit status."""
    args = parse_args(argv)
    stack = Stack(port=args.port, moto_port=args.moto_port, state_dir=args.state_dir.resolve(), fresh=args.fresh,
                  dev_token=os.environ.get("CAIRN_DEV_TOKEN") or None)
    stopping = threading.Event()

    def on_signal(signum, frame):  # noqa: ARG001
        stopping.set()
        stack.stop_event.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        token = stack.start()
        print(f"Cairn API:   {stack.base_url}", flush=True)
        print(f"Admin token: {token}", flush=True)
        print(f"moto:        {stack.endpoint}   state: {stack.state_dir}", flush=True)
        print("ready", flush=True)
        while not stopping.wait(0.5):
            if stack.chalice.poll() is not None:
                log(f"chalice local exited with status {stack.chalice.returncode}")
                return 1
        return 0
    finally:
        stack.stop()


if __name__ == "__main__":
    sys.exit(main())
