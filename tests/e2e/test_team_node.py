"""The Node.js Yjs interop test against the local stack: ``npm ci`` in
tests/node, then ``node --test tests/node`` with CAIRN_BASE_URL and CAIRN_TOKEN pointing at the
stack started by the e2e ``stack`` fixture. Fails (never skips) when Node.js or npm is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = ROOT / "tests" / "node"

pytestmark = pytest.mark.e2e


def test_two_yjs_editors_converge_through_the_api(stack):
    node, npm = shutil.which("node"), shutil.which("npm")
    assert node and npm, "Node.js 20 and npm are required for the Yjs interop test"
    major = int(subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
                .lstrip("v").split(".")[0])
    assert major >= 20, f"Node.js 20+ required, found {major}"
    if not (NODE_DIR / "node_modules" / "yjs").is_dir():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True, timeout=300)
    env = {**os.environ, "CAIRN_BASE_URL": stack.base_url, "CAIRN_TOKEN": stack.token}
    done = subprocess.run([node, "--test", "tests/node/"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# pass 1" in done.stdout and "# fail 0" in done.stdout and "# skipped 0" in done.stdout, done.stdout[-2000:]
