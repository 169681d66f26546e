"""``<state dir>/stack.json``: where a running local stack listens, for the CLI's ``--stage
local``. The launcher writes it once the API answers and removes it on stop; a file left by a
killed stack names a process that no longer runs and is ignored."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

RUN_FILE = "stack.json"
DEFAULT_STATE_DIR = ".cairn-local"


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$CAIRN_STATE_DIR`` (default ``.cairn-local``), resolved against the working directory."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    return Path(env.get("CAIRN_STATE_DIR") or DEFAULT_STATE_DIR).resolve()


def write(directory: Path, *, port: int, moto_port: int) -> None:
    """Record this process as the running stack: ``{pid, port, moto_port}`` (temp file, rename)."""
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{RUN_FILE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({"pid": os.getpid(), "port": port, "moto_port": moto_port}) + "\n")
    os.replace(tmp, directory / RUN_FILE)


def remove(directory: Path) -> None:
    """Forget the running stack (only when the file names this process)."""
    found = read(directory)
    if found is not None and found["pid"] == os.getpid():
        (directory / RUN_FILE).unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read(directory: Path) -> dict[str, Any] | None:
    """``{pid, port, moto_port}`` of the stack running from ``directory``, or None when none runs."""
    try:
        data = json.loads((directory / RUN_FILE).read_text())
        pid, port, moto_port = int(data["pid"]), int(data["port"]), int(data["moto_port"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return {"pid": pid, "port": port, "moto_port": moto_port} if _alive(pid) else None
