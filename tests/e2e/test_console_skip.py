"""Without a browser the console's tests skip and say so, unless ``CAIRN_REQUIRE_BROWSER=1``
(CI) turns the skip into a failure. No stack, no browser started."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from . import console_support
from .harness import ROOT

REASON = "no chromium on PATH"


def _skip(monkeypatch) -> pytest.skip.Exception:
    monkeypatch.setenv("CAIRN_CHROMIUM", "/nonexistent/chromium")
    monkeypatch.delenv("CAIRN_REQUIRE_BROWSER", raising=False)
    with pytest.raises(pytest.skip.Exception) as caught:
        console_support.browser_or_skip()
    return caught.value


def _report(outcome: str, longrepr) -> pytest.TestReport:
    return pytest.TestReport("tests/e2e/test_x.py::test_x", ("tests/e2e/test_x.py", 1, "test_x"), {}, outcome,
                             longrepr, "setup")


def test_no_chromium_skips_loudly(monkeypatch):
    assert _skip(monkeypatch).msg == f"{console_support.SKIP_LINE} ({REASON})"


def test_no_chromium_fails_when_a_browser_is_required(monkeypatch):
    monkeypatch.setenv("CAIRN_CHROMIUM", "/nonexistent/chromium")
    monkeypatch.setenv("CAIRN_REQUIRE_BROWSER", "1")
    with pytest.raises(pytest.fail.Exception, match=f"CAIRN_REQUIRE_BROWSER=1 but {REASON}"):
        console_support.browser_or_skip()


def test_the_skipped_report_carries_the_alarm_and_no_other_report_does(monkeypatch):
    skipped = _report("skipped", ("tests/e2e/test_x.py", 1, f"Skipped: {_skip(monkeypatch).msg}"))
    assert console_support.browser_skip_alarm(skipped) == (
        f"{console_support.SKIP_LINE} ({REASON}); CAIRN_REQUIRE_BROWSER=1 turns this into a failure")
    for other in (_report("skipped", ("tests/e2e/test_x.py", 1, "Skipped: measured on the stack itself")),
                  _report("passed", None), _report("failed", "AssertionError")):
        assert console_support.browser_skip_alarm(other) is None


def test_the_alarm_ends_a_run_spread_over_xdist_workers(tmp_path):
    """A worker's reports carry the alarm to the process that prints the summary (a module global
    of a worker never reaches it): the repository's conftest.py prints it once, between two rows
    of ``!``, after two skipped browser tests on an xdist worker."""
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    with (tmp_path / "conftest.py").open("a") as f:  # the e2e layer's hook, as tests/e2e/conftest.py has it
        f.write("\nfrom tests.e2e.conftest import pytest_runtest_makereport\n")
    (tmp_path / "test_console.py").write_text(textwrap.dedent("""\
        import pytest

        from tests.e2e.console_support import browser_or_skip


        @pytest.mark.parametrize("page", ["one", "two"])
        def test_console(page):
            browser_or_skip()
        """))
    env = {k: v for k, v in os.environ.items() if k != "CAIRN_REQUIRE_BROWSER"}
    env.update(CAIRN_CHROMIUM="/nonexistent/chromium", PYTHONPATH=str(ROOT))
    argv = ["-p", "no:cacheprovider", "-p", "no:schemathesis", "-n", "1", "--rootdir", str(tmp_path), str(tmp_path)]
    out = subprocess.run([sys.executable, "-m", "pytest", *argv], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and "2 skipped" in out.stdout, out.stdout[-3000:] + out.stderr[-3000:]
    alarm = f"{console_support.SKIP_LINE} ({REASON}); CAIRN_REQUIRE_BROWSER=1 turns this into a failure"
    assert re.search(r"^!{100}\n" + re.escape(alarm) + r"\n!{100}$", out.stdout, re.M), out.stdout[-3000:]
    assert out.stdout.count(alarm) == 1
