"""The unit layer stays pure: no unit test module pulls in boto3, botocore or moto, and the guard in
tests/unit/conftest.py refuses them (at import and while a test runs)."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from tests.unit.conftest import FORBIDDEN, UNIT_DIR, no_aws

ROOT = UNIT_DIR.parents[1]


def test_no_unit_module_imports_the_aws_sdk_or_moto():
    """In a fresh interpreter (this one may hold them already, for tests/api), importing every unit
    test module loads none of them, not even through the module under test."""
    modules = sorted(f"tests.unit.{p.stem}" for p in UNIT_DIR.glob("test_*.py"))
    assert "tests.unit.test_layers" in modules and len(modules) > 5
    script = ("import importlib, json, sys\n"
              f"for m in {modules!r}: importlib.import_module(m)\n"
              f"print(json.dumps(sorted(k for k in sys.modules if k.split('.')[0] in {FORBIDDEN!r})))\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.splitlines()[-1]) == []


def test_the_guard_refuses_the_aws_sdk_and_moto():
    with no_aws(hide_loaded=True):
        for name in ("boto3", "botocore.config", "moto"):
            with pytest.raises(ImportError, match="tests/unit tests pure modules"):
                importlib.import_module(name)
        assert importlib.import_module("json") is json  # everything else imports as usual


def test_a_unit_test_that_imports_boto3_fails(tmp_path):
    """The conftest, copied with two offending tests: one imports boto3 at module level, one in its
    body. Both fail, naming the module; a pure test beside them passes."""
    unit = tmp_path / "unit"
    unit.mkdir()
    shutil.copy(UNIT_DIR / "conftest.py", unit / "conftest.py")
    (unit / "test_top.py").write_text("import boto3\n\n\ndef test_top():\n    assert boto3\n")
    (unit / "test_body.py").write_text(textwrap.dedent("""\
        def test_body():
            from moto import mock_aws
            assert mock_aws


        def test_pure():
            assert sum([1, 2]) == 3
        """))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                          "--continue-on-collection-errors", str(unit)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stdout[-3000:]
    assert "importing 'boto3' is not allowed here" in out.stdout, out.stdout[-3000:]
    assert "importing 'moto' is not allowed here" in out.stdout, out.stdout[-3000:]
    assert "1 failed, 1 passed, 1 error" in out.stdout, out.stdout[-3000:]


def test_every_test_module_is_in_a_layer():
    """tests/ itself holds only the layers (unit, api, e2e): a module added at its top would run
    outside them, without the api fixtures or unguarded by tests/unit/conftest.py."""
    assert sorted(p.name for p in (ROOT / "tests").glob("*.py")) == ["__init__.py"]
    assert {"unit", "api", "e2e"} <= {p.name for p in (ROOT / "tests").iterdir() if p.is_dir()}
