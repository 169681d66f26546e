"""bench.startup: which modules count as ``import app``'s third-party imports, and its figures."""

from __future__ import annotations

import pytest

from bench import startup


def test_third_party_imports_are_what_app_loads_from_outside_the_service_and_the_standard_library(tmp_path):
    (tmp_path / "chalicelib").mkdir()
    (tmp_path / "chalicelib" / "__init__.py").write_text("import json\n")
    (tmp_path / "chalicelib" / "routes.py").write_text("import vendored\n")
    (tmp_path / "vendored.py").write_text("import decimal\nVALUE = sum(range(300_000))  # a few ms of CPU\n")
    (tmp_path / "app.py").write_text("import chalicelib.routes\n")
    got = startup.measure(tmp_path, ["-I", "-S", "-B"], 2)
    assert got["third_party_modules"] == 1 and got["repeat"] == 2  # vendored: neither json nor decimal
    assert got["import_app_ms"] > 0 and got["third_party_ms"] > 0
    # the ratios are of the unrounded medians; the times are rounded to 0.1 ms
    assert got["ratio"] == pytest.approx(got["import_app_ms"] / got["third_party_ms"], rel=0.1)
    assert got["cpu_ratio"] == pytest.approx(got["import_app_cpu_ms"] / got["third_party_cpu_ms"], rel=0.1)
