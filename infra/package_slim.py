"""``python -m infra.package_slim build/deployment.zip --drop tests docs ...`` (run by ``make
package`` between ``chalice package`` and the checks): what a Lambda never reads leaves the zip,
and what a cold start imports arrives compiled.

- ``--drop``: the categories of ``CATEGORIES`` whose files leave the zip (``make package`` names
  them in ``PACKAGE_DROP``). A licence file (``LICENSE``, ``COPYING``, ``NOTICE``, ``AUTHORS``)
  and anything under a ``*.dist-info`` folder always stay.
- ``--compile``: the modules a cold start imports (``import app``; every module of ``chalicelib``,
  as the first request or event that needs one imports it; ``chalicelib.semantic``'s model and
  one embedding, as ``infra.package_check``'s probe does), found by running the slimmed package
  alone, get an unchecked-hash ``.pyc`` beside their source (``__pycache__``). Lambda's
  ``/var/task`` is read-only: without one, every cold container compiles every module it imports.
  The build's Python must be the runtime's (3.11): a ``.pyc`` is tied to its minor version.

The zip is rewritten in place; entries keep their order, permissions and compression.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import marshal
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from infra.threads import THREAD_ENV

RUNTIME = (3, 11)  # the Lambda runtime .chalice/config.json deploys (python3.11)
PROBE_TIMEOUT_S = 300
_KEEP = re.compile(r"^(LICEN[CS]E|COPYING|NOTICE|AUTHORS)", re.IGNORECASE)
_DOC_NAME = re.compile(r"^(README|CHANGELOG|CHANGES|HISTORY)(\.(txt|md|rst))?$", re.IGNORECASE)  # never a module


def _tests(path: PurePosixPath) -> bool:
    return any(part in ("tests", "test") for part in path.parts[:-1]) or path.name == "conftest.py"


def _docs(path: PurePosixPath) -> bool:
    if "templates" in path.parts:  # a package's own templates (model cards...) are data it reads
        return False
    return path.suffix in (".md", ".rst") or bool(_DOC_NAME.match(path.name))


def _stubs(path: PurePosixPath) -> bool:
    return path.suffix == ".pyi"


def _sources(path: PurePosixPath) -> bool:
    return path.suffix in (".c", ".h", ".cc", ".cpp", ".hpp", ".pyx", ".pxd")


def _zstd_cffi(path: PurePosixPath) -> bool:
    # zstandard ships a C extension backend and a CFFI one (each ~12 MB unzipped); it imports
    # the C one first, so the CFFI one is never loaded
    return path.parts[0] == "zstandard" and (path.name.startswith("_cffi.") or path.name == "backend_cffi.py")


CATEGORIES: dict[str, Callable[[PurePosixPath], bool]] = {
    "tests": _tests,  # test folders (tests/, test/) of the bundled packages, conftest.py
    "docs": _docs,  # README/CHANGELOG/CHANGES/HISTORY files, *.md and *.rst
    "stubs": _stubs,  # *.pyi type stubs: never imported
    "sources": _sources,  # C, C++ and Cython sources and headers left beside built extensions
    "zstd-cffi": _zstd_cffi,  # zstandard's second backend
}
"""Each category of files the package may leave out: name -> whether a zip entry's path is one."""


def dropped(name: str, categories: list[str]) -> str | None:
    """The first of ``categories`` the zip entry ``name`` belongs to, or None when it stays (a
    folder entry, a licence file and a ``*.dist-info`` file always stay)."""
    path = PurePosixPath(name)
    if name.endswith("/") or _KEEP.match(path.name) or any(p.endswith(".dist-info") for p in path.parts):
        return None
    return next((c for c in categories if CATEGORIES[c](path)), None)


# Runs in `python -I -S -B`: the package folder (argv[1]) and the standard library only.
PROBE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import app
import importlib, pkgutil, chalicelib
# every module of the service: app.py registers every route and event, each module imported on first use
for info in pkgutil.walk_packages(chalicelib.__path__, "chalicelib."):
    importlib.import_module(info.name)
from chalicelib import semantic
semantic.embed_query("warm the model")
import zstandard
print(json.dumps(sorted({m.__file__ for m in list(sys.modules.values())
                         if getattr(m, "__file__", None) and m.__file__.endswith(".py")})))
"""


def imported_sources(folder: Path) -> list[str]:
    """The package-relative paths of the ``.py`` files a cold start imports from ``folder`` (the
    unzipped package). Raises ``RuntimeError`` with the child's stderr when it fails."""
    env = {"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1", **THREAD_ENV}
    r = subprocess.run([sys.executable, "-I", "-S", "-B", "-c", PROBE, str(folder)], capture_output=True,
                       text=True, env=env, cwd=folder, timeout=PROBE_TIMEOUT_S, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"the package's cold start failed: {r.stderr.strip()[-2000:]}")
    root = folder.resolve()
    out = []
    for f in json.loads(r.stdout.strip().splitlines()[-1]):
        p = Path(f).resolve()
        if p.is_relative_to(root):
            out.append(p.relative_to(root).as_posix())
    return out


def pyc(source: bytes, name: str) -> bytes:
    """An unchecked-hash ``.pyc`` of ``source`` (the module at package path ``name``): valid
    whatever the files' times after unzipping, never compared with the source."""
    code = compile(source, name, "exec", dont_inherit=True)
    flags = 0b01  # hash-based, unchecked (PEP 552)
    header = importlib.util.MAGIC_NUMBER + flags.to_bytes(4, "little") + importlib.util.source_hash(source)
    return header + marshal.dumps(code)


def cached_name(name: str) -> str:
    """``pkg/mod.py`` -> ``pkg/__pycache__/mod.cpython-311.pyc`` (the runtime's cache tag)."""
    path = PurePosixPath(name)
    return str(path.parent / "__pycache__" / f"{path.stem}.{sys.implementation.cache_tag}.pyc")


def slim(zip_path: Path, categories: list[str], compile_imported: bool) -> dict[str, int]:
    """Rewrite ``zip_path`` without the files of ``categories`` and, with ``compile_imported``,
    with a ``.pyc`` of every module a cold start imports; returns the counts (``dropped``,
    ``dropped_bytes`` unzipped, ``compiled``, ``compiled_bytes``)."""
    stats = {"dropped": 0, "dropped_bytes": 0, "compiled": 0, "compiled_bytes": 0}
    with tempfile.TemporaryDirectory(prefix="cairn-slim-") as tmp:
        slimmed = Path(tmp) / "slim.zip"
        with zipfile.ZipFile(zip_path) as zin, zipfile.ZipFile(slimmed, "w") as zout:
            for info in zin.infolist():
                if dropped(info.filename, categories) is not None or "/__pycache__/" in f"/{info.filename}":
                    stats["dropped"] += 1
                    stats["dropped_bytes"] += info.file_size
                    continue
                zout.writestr(info, zin.read(info), compress_type=info.compress_type)
        if compile_imported:
            folder = Path(tmp) / "package"
            with zipfile.ZipFile(slimmed) as z:
                z.extractall(folder)
            with zipfile.ZipFile(slimmed, "a", compression=zipfile.ZIP_DEFLATED) as z:
                for name in imported_sources(folder):
                    data = pyc((folder / name).read_bytes(), name)
                    info = zipfile.ZipInfo(cached_name(name), date_time=(2020, 1, 1, 0, 0, 0))
                    info.external_attr = 0o644 << 16
                    z.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
                    stats["compiled"] += 1
                    stats["compiled_bytes"] += len(data)
        slimmed.replace(zip_path)
    return stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m infra.package_slim", description=__doc__.split("\n\n")[0])
    ap.add_argument("zip", type=Path, help="the deployment package (build/deployment.zip), rewritten in place")
    ap.add_argument("--drop", nargs="*", default=[], choices=sorted(CATEGORIES), help="categories to leave out")
    ap.add_argument("--compile", action="store_true", help="add a .pyc of each module a cold start imports")
    args = ap.parse_args(argv)
    if args.compile and sys.version_info[:2] != RUNTIME:
        print(f"package_slim: --compile needs Python {RUNTIME[0]}.{RUNTIME[1]} (the Lambda runtime), "
              f"not {sys.version_info[0]}.{sys.version_info[1]}", file=sys.stderr)
        return 1
    stats = slim(args.zip, args.drop, args.compile)
    print(f"package slimmed: {stats['dropped']} files left out ({stats['dropped_bytes'] / (1 << 20):.1f} MiB "
          f"unzipped: {', '.join(args.drop) or 'none'}); {stats['compiled']} modules compiled "
          f"({stats['compiled_bytes'] / (1 << 20):.1f} MiB of .pyc)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
