"""infra.package_slim: which files leave the deployment zip, and the .pyc it adds are the ones the
runtime reads (``make package`` runs it on build/deployment.zip)."""

from __future__ import annotations

import subprocess
import sys
import zipfile

from infra import package_check, package_slim

EVERY = list(package_slim.CATEGORIES)


def test_each_category_names_its_files_and_nothing_a_lambda_reads():
    cases = {
        "numpy/_core/tests/test_api.py": "tests", "numpy/conftest.py": "tests", "pkg/test/data.json": "tests",
        "numpy/ma/README.rst": "docs", "openai/resources/live/api.md": "docs", "pkg/CHANGELOG": "docs",
        "tokenizers/__init__.pyi": "stubs", "numpy/__init__.pxd": "sources", "x/checks/cpu.c": "sources",
        "zstandard/_cffi.cpython-311-x86_64-linux-gnu.so": "zstd-cffi", "zstandard/backend_cffi.py": "zstd-cffi",
    }
    for name, category in cases.items():
        assert package_slim.dropped(name, EVERY) == category, name
    for name in ("zstandard/backend_c.cpython-311-x86_64-linux-gnu.so", "zstandard/__init__.py",
                 "numpy/testing/__init__.py", "numpy/random/LICENSE.md", "whoosh/LICENSE.txt",
                 "pkg-1.0.dist-info/METADATA", "pkg-1.0.dist-info/README.md", "chalicelib/api/banks.py",
                 "pkg/history.py", "pkg/changes.py", "pkg/readme_parser.py", "latest_test.py",
                 "huggingface_hub/templates/modelcard_template.md", "pkg/tests/", "botocore/data/s3/service-2.json"):
        assert package_slim.dropped(name, EVERY) is None, name
    assert package_slim.dropped("tokenizers/__init__.pyi", ["tests", "docs"]) is None  # only those asked


def test_slim_rewrites_the_zip_without_the_dropped_files_keeping_the_rest_whole(tmp_path):
    path = tmp_path / "deployment.zip"
    kept = {"app.py": b"import os\n", "numpy/LICENSE.txt": b"BSD", "numpy/tests/": b"",
            "zstandard/backend_c.so": b"\x7fELF" + bytes(range(256)) * 40}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in {**kept, "numpy/tests/test_a.py": b"x" * 500, "zstandard/backend_cffi.py": b"y" * 70,
                           "a/__pycache__/m.cpython-311.pyc": b"old"}.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16
            z.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
    stats = package_slim.slim(path, EVERY, compile_imported=False)
    assert stats == {"dropped": 3, "dropped_bytes": 573, "compiled": 0, "compiled_bytes": 0}
    with zipfile.ZipFile(path) as z:
        assert z.namelist() == list(kept)
        assert all(z.read(n) == d for n, d in kept.items())
        assert all(i.external_attr >> 16 == 0o755 and i.compress_type == zipfile.ZIP_DEFLATED for i in z.infolist())
    assert package_check.leftovers(path) == {}


def test_leftovers_name_each_category_still_in_the_zip(tmp_path):
    path = tmp_path / "p.zip"
    with zipfile.ZipFile(path, "w") as z:
        for name in ("app.py", "numpy/tests/test_a.py", "numpy/tests/test_b.py", "zstandard/_cffi.so", "a.pyi"):
            z.writestr(name, b"")
    assert package_check.leftovers(path) == {"tests": ["numpy/tests/test_a.py", "numpy/tests/test_b.py"],
                                             "zstd-cffi": ["zstandard/_cffi.so"], "stubs": ["a.pyi"]}


def test_the_runtime_imports_the_shipped_pyc_without_checking_the_source(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text("WHO = 'source'\n")
    cached = tmp_path / package_slim.cached_name("pkg/mod.py")
    cached.parent.mkdir()
    cached.write_bytes(package_slim.pyc(b"WHO = 'pyc'\n", "pkg/mod.py"))  # unchecked: never compared
    r = subprocess.run([sys.executable, "-I", "-S", "-B", "-c",
                        "import sys; sys.path.insert(0, sys.argv[1]); import pkg.mod as m; print(m.WHO, m.__file__)",
                        str(tmp_path)], capture_output=True, text=True, check=True, cwd=tmp_path)
    who, file = r.stdout.split()
    assert who == "pyc" and file == str(tmp_path / "pkg" / "mod.py")  # the source's path, for tracebacks
