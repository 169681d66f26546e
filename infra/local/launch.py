"""Start the local stack as a child process, the way ``make run`` does, and wait until it is ready.

The one launcher behind the end-to-end tests (``tests/e2e/harness.py``) and the local benchmark
(``bench/local.py``): ``python -m infra.local.stack`` in a checkout (``root``), on free ports,
with its own state directory and dev token, leading its own process group; its stdout is drained
for the ``ready`` line, its stderr goes to a log file.
"""

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
from typing import IO

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 120.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pump(stream: IO[bytes], lines: queue.Queue[str | None]) -> None:
    """Put each line of ``stream`` on ``lines`` (decoded, right-stripped), then ``None`` at its end:
    draining it keeps the child from blocking on a full pipe."""
    for raw in stream:
        lines.put(raw.decode(errors="replace").rstrip())
    lines.put(None)


class StackProcess:
    """One ``python -m infra.local.stack`` child with its own ``state_dir`` and dev ``token``;
    ``env`` adds variables to the child's environment (the caller's ``CAIRN_*``,
    ``AWS_ENDPOINT_URL*`` and ``AWS_PROFILE`` are never passed on)."""

    def __init__(self, state_dir: Path, token: str, log_path: Path, *, root: Path = ROOT,
                 env: dict[str, str] | None = None) -> None:
        self.state_dir, self.token, self.log_path, self.root = state_dir, token, log_path, root
        self.extra_env = dict(env or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = self.moto_port = 0
        self.stdout: list[str] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def moto_url(self) -> str:
        return f"http://127.0.0.1:{self.moto_port}"

    def _environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("CAIRN_", "AWS_ENDPOINT_URL")) and k != "AWS_PROFILE"}
        env.update(CAIRN_PORT=str(self.port), CAIRN_MOTO_PORT=str(self.moto_port),
                   CAIRN_STATE_DIR=str(self.state_dir), CAIRN_DEV_TOKEN=self.token, PYTHONUNBUFFERED="1")
        env.update(self.extra_env)
        return env

    def start(self, *extra: str, ports: tuple[int, int] | None = None,
              timeout_s: float = START_TIMEOUT_S) -> StackProcess:
        """Start with launcher options ``extra`` and wait for its ``ready`` line (the API answered)
        at most ``timeout_s`` seconds. ``ports``: ``(api, moto)``, default two free ones. Raises
        ``RuntimeError`` with the launcher's stdout and log tail when it never gets ready."""
        self.port, self.moto_port = ports or (free_port(), free_port())
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - the child writes to it until stop() closes it
        self.proc = subprocess.Popen([sys.executable, "-m", "infra.local.stack", *extra], cwd=self.root,
                                     env=self._environment(), stdout=subprocess.PIPE, stderr=self._log,
                                     start_new_session=True)
        lines: queue.Queue[str | None] = queue.Queue()
        assert self.proc.stdout is not None  # stdout=PIPE
        threading.Thread(target=_pump, args=(self.proc.stdout, lines), daemon=True).start()
        self.stdout = []
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
        raise RuntimeError(f"local stack in {self.root} did not become ready; stdout={self.stdout}; "
                           f"log tail={self.log_path.read_text(errors='replace')[-3000:]}")

    def stop(self, timeout_s: float = 60.0) -> int | None:
        """SIGINT (Ctrl-C), as a person would; the whole process group is SIGKILLed when it has not
        exited after ``timeout_s``. Returns the exit status (``None`` when not running)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._log.close()
        rc, self.proc = self.proc.returncode, None
        return rc

    def kill_group(self) -> None:
        """SIGKILL the launcher's whole process group, as ``kill -9 -<pgid>`` of ``make run``."""
        if self.proc is None:
            return
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        self._log.close()
        self.proc = None
