"""Run the local stack the way ``make run`` does (``python -m infra.local.stack``) for tests."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import boto3

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 120


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalStack:
    """One ``python -m infra.local.stack`` child on free ports with its own state dir."""

    def __init__(self, state_dir: Path, token: str, log_path: Path) -> None:
        self.state_dir, self.token, self.log_path = state_dir, token, log_path
        self.proc: subprocess.Popen | None = None
        self.port = self.moto_port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def moto_url(self) -> str:
        return f"http://127.0.0.1:{self.moto_port}"

    def start(self, *extra: str, ports: tuple[int, int] | None = None,
              timeout_s: float = START_TIMEOUT_S) -> LocalStack:
        """Start and wait for the launcher's "ready" line (the API answered) at most ``timeout_s``.
        ``ports``: ``(api, moto)``, default two free ones. The launcher leads its own process
        group (``kill_group``)."""
        self.port, self.moto_port = ports or (free_port(), free_port())
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("CAIRN_", "AWS_ENDPOINT_URL")) and k != "AWS_PROFILE"}
        env.update(CAIRN_PORT=str(self.port), CAIRN_MOTO_PORT=str(self.moto_port),
                   CAIRN_STATE_DIR=str(self.state_dir), CAIRN_DEV_TOKEN=self.token, PYTHONUNBUFFERED="1")
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - the child writes to it until stop() closes it
        self.proc = subprocess.Popen([sys.executable, "-m", "infra.local.stack", *extra], cwd=ROOT, env=env,
                                     stdout=subprocess.PIPE, stderr=self._log, start_new_session=True)
        lines: queue.Queue = queue.Queue()

        def pump() -> None:  # keep draining stdout so the child never blocks on a full pipe
            for raw in self.proc.stdout:
                lines.put(raw.decode(errors="replace").rstrip())
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        self.stdout: list[str] = []
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                continue
            if line is None:
                break
            self.stdout.append(line)
            if line == "ready":
                return self
        self.stop()
        raise RuntimeError(f"local stack did not become ready; stdout={self.stdout}; "
                           f"log tail={self.log_path.read_text(errors='replace')[-3000:]}")

    def stop(self) -> int | None:
        """SIGINT (Ctrl-C), as a person would; returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        rc, self.proc = self.proc.returncode, None
        return rc

    def kill_group(self) -> None:
        """SIGKILL the launcher's whole process group, as ``kill -9 -<pgid>`` of ``make run``."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        self._log.close()
        self.proc = None

    def dynamodb(self):
        """A boto3 DynamoDB client on the stack's moto endpoint (for checks the API does not expose)."""
        return boto3.client("dynamodb", region_name="us-east-1", endpoint_url=self.moto_url,
                            aws_access_key_id="testing", aws_secret_access_key="testing")

    def bank_seq(self, bank: str, org: str = "default") -> int:
        """The bank row's ``seq`` (consistent read), 0 when the bank does not exist."""
        item = self.dynamodb().get_item(TableName="cairn-local-banks", ConsistentRead=True,
                                        Key={"org_id": {"S": org}, "name": {"S": bank}}).get("Item")
        return int(item["seq"]["N"]) if item else 0
