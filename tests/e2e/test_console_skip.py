"""Without a browser the console's tests skip and say so, unless ``CAIRN_REQUIRE_BROWSER=1``
(CI) turns the skip into a failure. No stack, no browser started."""

from __future__ import annotations

import pytest

from . import console_support


def test_no_chromium_skips_loudly(monkeypatch):
    monkeypatch.setenv("CAIRN_CHROMIUM", "/nonexistent/chromium")
    monkeypatch.delenv("CAIRN_REQUIRE_BROWSER", raising=False)
    monkeypatch.setattr(console_support, "SKIPPED", [])
    with pytest.raises(pytest.skip.Exception, match="BROWSER TESTS SKIPPED"):
        console_support.browser_or_skip()
    assert console_support.SKIPPED == ["no chromium on PATH"]


def test_no_chromium_fails_when_a_browser_is_required(monkeypatch):
    monkeypatch.setenv("CAIRN_CHROMIUM", "/nonexistent/chromium")
    monkeypatch.setenv("CAIRN_REQUIRE_BROWSER", "1")
    monkeypatch.setattr(console_support, "SKIPPED", [])
    with pytest.raises(pytest.fail.Exception, match="CAIRN_REQUIRE_BROWSER=1"):
        console_support.browser_or_skip()
    assert console_support.SKIPPED == []
