"""The local stack behind ``make run``: ``python -m infra.local.stack``.

One process runs moto's server on loopback (DynamoDB, S3, SQS) with ``motolock`` installed,
creates the template's resources (``infra.local.resources``), restores the saved state, mints the
dev admin token, and runs ``chalice local`` as a child process pointed at moto (through
``infra.local.chalice_local``, which patches Chalice's local server and makes the child die with
this process). It prints the base URL and the token, then "ready" once the API answers.
SIGINT/SIGTERM stop the child, compact the state and stop moto.

Persistence (docs/operations.md, "Local stack"; ``infra.local.durable``): every write to moto's DynamoDB
and S3 is journaled (its after-images, fsynced before moto answers) and replayed over the last
snapshot on start, so an acknowledged write survives ``kill -9`` of the whole stack. The state
dir is taken with ``flock`` (one stack per state dir). ``--fresh`` deletes the saved state;
``--no-persist`` neither loads nor saves it.

Extension point: the launcher runs ``Worker`` threads (``Stack.workers``): the journal's
compactor, and the SQS poller, schedule timer and rule-ETag watcher of ``infra.local.events``,
each ``Worker(name, tick, interval_s)``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import requests  # type: ignore[import-untyped]  # no types-requests in the environment

from . import motolock, runfile
from .chalice_local import PARENT_PID_ENV
from .durable import Durable, MotoServer, StateDirBusy, install_hooks
from .resources import create_resources

ROOT = Path(__file__).resolve().parent.parent.parent
STACK = "cairn-local"
REGION = "us-east-1"
DEFAULT_PORT = 8000
DEFAULT_MOTO_PORT = 5005
TOKEN_FILE = "dev-token"
COMPACT_CHECK_S = 1.0
READY_TIMEOUT_S = 90.0
FAKE_CREDS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": REGION}


def log(msg: str) -> None:
    """One launcher line on stderr (stdout carries the URL, token and "ready")."""
    print(f"[cairn-local] {msg}", file=sys.stderr, flush=True)


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
    ``stop()`` is idempotent. ``persist=False``: the state dir is used for the dev token only."""

    def __init__(self, *, port: int, moto_port: int, state_dir: Path, fresh: bool, dev_token: str | None,
                 persist: bool = True) -> None:
        self.port, self.moto_port = port, moto_port
        self.state_dir = state_dir
        self.fresh = fresh
        self.persist = persist
        self.dev_token = dev_token
        self.endpoint = f"http://127.0.0.1:{moto_port}"
        self.base_url = f"http://127.0.0.1:{port}"
        self.stop_event = threading.Event()
        self.workers: list[Worker] = []
        self.server: MotoServer | None = None
        self.chalice: subprocess.Popen | None = None
        self.durable: Durable | None = None
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

    def _restore(self, durable: Durable) -> None:
        """Load the saved state into moto (or discard it with ``--fresh``) and start journaling."""
        if self.fresh:
            durable.discard()
            log("--fresh: starting empty (the saved state was deleted)")
        else:
            loaded = durable.load()
            if loaded["items"] or loaded["objects"]:
                log(f"restored {loaded['items']} items and {loaded['objects']} objects from {self.state_dir} "
                    f"({loaded['journal_records']} journal records)")
        durable.open()

    def start(self) -> str:
        """Bring the stack up; returns the admin token."""
        self._preflight()
        self._start_moto()
        names = self._provision()
        token = self._token()
        from chalicelib.auth.principal import PERMISSIONS
        from chalicelib.auth.tokens import MintRequest, mint
        mint("default", MintRequest(kind="person", user_id="dev", permissions=list(PERMISSIONS), label="dev admin"),
             created_by="local-stack", token=token)
        self._start_api(names, token)
        runfile.write(self.state_dir, port=self.port, moto_port=self.moto_port)  # for the CLI's --stage local
        self._start_workers()
        return token

    def _preflight(self) -> None:
        """Refuse to start (``SystemExit``) on a preflight error or a port in use; log warnings."""
        from .preflight import problems
        errors, warnings = problems()
        for warning in warnings:
            log(f"WARNING: {warning}")
        if errors:
            raise SystemExit("refusing to start: " + "; ".join(errors))
        for p in (self.port, self.moto_port):
            if not _free_port(p):
                raise SystemExit(f"port {p} on 127.0.0.1 is in use (set CAIRN_PORT / CAIRN_MOTO_PORT)")

    def _start_moto(self) -> None:
        """Take the state directory (``persist``) and serve moto, journaled, on ``moto_port``."""
        if self.persist:
            self.durable = Durable(self.state_dir, log=log)
            try:
                self.durable.acquire()
            except StateDirBusy as exc:
                raise SystemExit(f"{exc} (stop it, or set CAIRN_STATE_DIR)") from None
        motolock.install()  # before serving: moto's transactions are not thread-safe
        install_hooks()
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's per-request lines
        self.server = MotoServer("127.0.0.1", self.moto_port, self.durable)
        self.server.start()
        log(f"moto on {self.endpoint}")

    def _provision(self) -> dict[str, str]:
        """Point this process at moto, create the template's resources, restore the saved state;
        returns the resources' ``CAIRN_*`` names (also set in this process's environment)."""
        os.environ.update(FAKE_CREDS)
        os.environ["AWS_ENDPOINT_URL"] = self.endpoint
        for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3"):
            os.environ.pop(var, None)
        names = create_resources(STACK, region=REGION, endpoint_url=self.endpoint)
        if self.durable is not None:
            self._restore(self.durable)
        else:
            log("--no-persist: nothing is loaded or saved")
        os.environ.update(names)
        os.environ["CAIRN_STAGE"] = "local"
        return names

    def _start_api(self, names: dict[str, str], token: str) -> None:
        """Start ``chalice local`` and wait until it answers ``token``."""
        self.env = {**os.environ, **names, "AWS_ENDPOINT_URL": self.endpoint, "PYTHONUNBUFFERED": "1",
                    PARENT_PID_ENV: str(os.getpid())}
        pinned = os.environ.get("CAIRN_INDEX_DIR")
        if pinned:  # one index directory per process: the API child and this process's workers
            self.env["CAIRN_INDEX_DIR"] = os.path.join(pinned, "api")
            os.environ["CAIRN_INDEX_DIR"] = os.path.join(pinned, "launcher")
        # `chalice local` through the wrapper (chalice_local.py): its own session, so Ctrl-C
        # reaches only this process, which stops it in order; it dies with this process.
        cmd = [sys.executable, "-m", "infra.local.chalice_local", "local", "--host", "127.0.0.1",
               "--port", str(self.port), "--stage", "local", "--no-autoreload"]
        self.chalice = subprocess.Popen(cmd, cwd=ROOT, env=self.env, start_new_session=True)
        self._wait_ready(self.chalice, token)

    def _start_workers(self) -> None:
        """The compactor and the event loops (SQS poller, schedule timer, rule-ETag watcher)."""
        if self.durable is not None:
            self.workers.append(Worker("compactor", self.durable.compact_if_due, COMPACT_CHECK_S))
        # The SQS poller, schedule timer and rule-ETag watcher call app.py's own handlers
        from app import app as chalice_app

        from .events import LocalEvents
        self.workers += LocalEvents(chalice_app, log=log).workers()
        for worker in self.workers:
            worker.start(self.stop_event)

    def exit_status(self) -> int | None:
        """``chalice local``'s exit status once it has exited, else ``None``."""
        return self.chalice.poll() if self.chalice is not None else None

    def _wait_ready(self, chalice: subprocess.Popen, token: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.stop_event.is_set():
                raise SystemExit("stopped before the API was ready")
            if chalice.poll() is not None:
                raise SystemExit(f"chalice local exited with status {chalice.returncode}")
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
        """Stop the child, run workers' ``final``, compact the state, stop moto."""
        if self._stopped:
            return
        self._stopped = True
        runfile.remove(self.state_dir)
        self.stop_event.set()
        if self.chalice is not None and self.chalice.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.chalice.pid, signal.SIGTERM)
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
                except Exception as exc:  # noqa: BLE001 - one worker failing to stop must not keep the others running
                    log(f"{worker.name}: {type(exc).__name__}: {exc}")
        if self.durable is not None and self.durable.active:
            self.durable.close()
            log(f"state saved to {self.state_dir}")
        if self.server is not None:
            self.server.stop()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options; defaults come from CAIRN_PORT, CAIRN_MOTO_PORT, CAIRN_STATE_DIR."""
    p = argparse.ArgumentParser(prog="python -m infra.local.stack", description="Run Cairn's local stack.")
    p.add_argument("--port", type=int, default=int(os.environ.get("CAIRN_PORT", DEFAULT_PORT)),
                   help="API port (CAIRN_PORT, default 8000)")
    p.add_argument("--moto-port", type=int, default=int(os.environ.get("CAIRN_MOTO_PORT", DEFAULT_MOTO_PORT)),
                   help="moto server port (CAIRN_MOTO_PORT, default 5005)")
    p.add_argument("--state-dir", type=Path, default=runfile.state_dir(),  # where the CLI looks for the stack
                   help="where the state is saved (CAIRN_STATE_DIR, default .cairn-local/)")
    p.add_argument("--fresh", action="store_true", help="start empty, deleting the saved state")
    p.add_argument("--no-persist", action="store_true",
                   help="neither load nor save the state (start empty, forget everything on stop)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run until SIGINT/SIGTERM or until chalice local exits; returns the exit status."""
    args = parse_args(argv)
    stack = Stack(port=args.port, moto_port=args.moto_port, state_dir=args.state_dir.resolve(), fresh=args.fresh,
                  dev_token=os.environ.get("CAIRN_DEV_TOKEN") or None, persist=not args.no_persist)
    stopping = threading.Event()

    def on_signal(signum, frame):
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
            status = stack.exit_status()
            if status is not None:
                log(f"chalice local exited with status {status}")
                return 1
        return 0
    finally:
        stack.stop()


if __name__ == "__main__":
    sys.exit(main())
