"""The command-line tool's checks that come before any AWS call."""

from __future__ import annotations

import io

from chalicelib import cli


def run(*argv, stdin=None):
    """``(status, stdout, stderr)`` of one CLI call."""
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(["--stage", "dev", *argv], out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def test_aws_stage_needs_the_deployed_names(monkeypatch):
    monkeypatch.delenv("CAIRN_TABLE_PREFIX", raising=False)
    monkeypatch.delenv("CAIRN_BUCKET", raising=False)
    status, _, err = run("export", "--org", "o", "--bank", "b")
    assert status == 2 and "CAIRN_TABLE_PREFIX" in err and "CAIRN_BUCKET" in err
