"""No two processes share an index directory: by default each process gets its own under the
system temp dir (as a Lambda container has its own /tmp), removed when it exits; an explicit
CAIRN_INDEX_DIR still pins it."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from chalicelib.search import index

ROOT = Path(__file__).resolve().parents[2]
PRINT_ROOT = ("import os; from chalicelib.search.index import IndexCache; c = IndexCache(); "
              "print(c.root, os.path.isdir(c.root), IndexCache().root == c.root, flush=True)")


def _root_of_a_process() -> tuple[str, bool, bool]:
    env = {k: v for k, v in os.environ.items() if k != "CAIRN_INDEX_DIR"}
    out = subprocess.run([sys.executable, "-c", PRINT_ROOT], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    return out[0], out[1] == "True", out[2] == "True"


def test_two_processes_get_different_private_index_dirs_removed_at_exit():
    (a, a_existed, a_same), (b, b_existed, b_same) = _root_of_a_process(), _root_of_a_process()
    assert a != b
    assert a_existed and b_existed and a_same and b_same  # one directory per process, shared by its caches
    for root in (a, b):
        assert Path(root).parent == Path(tempfile.gettempdir())
        assert not Path(root).exists()  # removed when the process exited


def test_the_default_is_not_the_shared_dir_of_earlier_versions(monkeypatch):
    monkeypatch.delenv("CAIRN_INDEX_DIR", raising=False)
    root = index.IndexCache().root
    assert root == index.private_root()
    assert os.path.basename(root).startswith(f"cairn-index-{os.getpid()}-")
    assert root != os.path.join(tempfile.gettempdir(), "cairn-index")


def test_an_explicit_setting_pins_the_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("CAIRN_INDEX_DIR", str(tmp_path / "pinned"))
    assert index.IndexCache().root == str(tmp_path / "pinned")
    assert index.IndexCache(str(tmp_path / "arg")).root == str(tmp_path / "arg")
