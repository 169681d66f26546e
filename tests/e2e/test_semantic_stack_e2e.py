"""The local stack's API process (``chalice local``, started as ``make run`` starts it) runs the
embedder on one BLAS thread with the venv's model folder, and that environment gives the
reference vectors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np

from infra.threads import THREAD_ENV

from .harness import LocalStack

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = json.loads((ROOT / "tests" / "data" / "semantic-reference.json").read_text(encoding="utf-8"))
PROBE = """
import json, sys
from chalicelib import semantic
print(json.dumps({"dir": str(semantic.artifact_dir()),
                  "vectors": [semantic.embed_query(s).tolist() for s in json.load(sys.stdin)]}))
"""


def _descendants(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            out += [int(child), *_descendants(int(child))]
    return out


def _api_process(stack) -> tuple[list[str], dict[str, str]]:
    """The ``chalice local`` child's command line and environment (from /proc)."""
    for pid in _descendants(stack.proc.pid):
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        if "infra.local.chalice_local" in cmd:
            raw = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace").split("\0")
            return cmd, dict(kv.split("=", 1) for kv in raw if "=" in kv)
    raise AssertionError("no chalice local process under the stack")


def test_the_api_process_pins_threads_and_its_environment_embeds_like_the_reference(tmp_path, monkeypatch):
    for name in THREAD_ENV:  # the pins must come from the stack itself, not from this test session
        monkeypatch.delenv(name, raising=False)
    stack = LocalStack(tmp_path / "state", "cairn_e2e_semantic_token_abcdef0123", tmp_path / "stack.log").start()
    try:
        cmd, env = _api_process(stack)
    finally:
        assert stack.stop() == 0
    assert {k: env.get(k) for k in THREAD_ENV} == THREAD_ENV
    r = subprocess.run([cmd[0], "-c", PROBE], input=json.dumps(REFERENCE["sentences"]), cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert Path(out["dir"]).resolve() == (ROOT / "chalicelib" / "semantic" / "model").resolve()
    cos = np.einsum("ij,ij->i", np.asarray(out["vectors"], np.float32), np.asarray(REFERENCE["vectors"], np.float32))
    assert cos.min() >= REFERENCE["min_cosine"], cos
