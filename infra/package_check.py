"""``python -m infra.package_check build/deployment.zip`` (run by ``make package``): does the
deployment package work on its own?

- Chalice's output (``--chalice-log``): ``chalice package`` only warns, exit 0, when it cannot find
  a Lambda wheel for a requirement (``MISSING_WARNING``, from its packager); any such warning fails.
- Size: prints the zipped and unzipped sizes; fails above ``MAX_UNZIPPED`` (Lambda refuses a
  function over 250 MiB unzipped; the rest is headroom). A zip over ``DIRECT_DEPLOY_MAX`` cannot go
  through ``chalice deploy``: deploy through S3 (docs/operations.md).
- Threads: every function of ``--sam`` carries ``infra.threads.THREAD_ENV``.
- Slimmed (``infra.package_slim``): no file of its ``CATEGORIES`` is left (tests, docs, stubs,
  sources, zstandard's CFFI backend), and zstandard answers with its C backend.
- The package alone: unzipped into an empty folder, ``python -I -S -B`` (nothing written, as on
  Lambda's read-only ``/var/task``) with only that folder and the
  standard library on ``sys.path`` imports ``app`` (timed: the ``.pyc`` the package ships count),
  then embeds the reference sentences
  (``tests/data/semantic-reference.json``) with ``chalicelib.semantic`` from the packaged model
  folder; every cosine must reach the file's ``min_cosine``.

Exit status 0 when every check passes, else 1 with one line per failure on stderr.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from infra.package_slim import CATEGORIES, dropped
from infra.threads import THREAD_ENV

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "tests" / "data" / "semantic-reference.json"
MIB = 1 << 20
MAX_UNZIPPED = 220 * MIB
DIRECT_DEPLOY_MAX = 50 * MIB  # chalice deploy (a direct Lambda upload) refuses a larger zip
MISSING_WARNING = "Could not install dependencies:"  # chalice.constants.MISSING_DEPENDENCIES_TEMPLATE
PROBE_TIMEOUT_S = 300

# Runs in `python -I -S`: sys.path is the standard library plus the unzipped package (argv[1]).
PROBE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
started = time.perf_counter()
import app
imported = time.perf_counter()
from chalicelib import semantic
sentences = json.load(sys.stdin)
queries = [semantic.embed_query(s) for s in sentences]
documents = semantic.embed_documents(sentences)
import zstandard
print(json.dumps({
    "zstd_backend": zstandard.backend,
    "sys_path": sys.path, "app": app.__file__, "model_dir": str(semantic.artifact_dir()),
    "available": semantic.available(), "reason": semantic.unavailable_reason(),
    "import_app_ms": round((imported - started) * 1000, 1),
    "queries": [None if v is None else v.tolist() for v in queries],
    "documents": [None if v is None else v.tolist() for v in documents],
}))
"""


def missing_dependencies(chalice_output: str) -> list[str]:
    """The requirements ``chalice package`` said it could not bundle (empty when none): the lines
    between its ``MISSING_WARNING`` and the next blank line."""
    out: list[str] = []
    lines = chalice_output.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == MISSING_WARNING:
            for name in lines[i + 1:]:
                if not name.strip() or name.startswith("You will have to"):
                    break
                out.append(name.strip())
            out = out or ["(unnamed)"]
    return out


def sizes(zip_path: Path) -> tuple[int, int]:
    """``(zipped, unzipped)`` bytes of ``zip_path``."""
    with zipfile.ZipFile(zip_path) as z:
        return zip_path.stat().st_size, sum(i.file_size for i in z.infolist())


def leftovers(zip_path: Path) -> dict[str, list[str]]:
    """The files of ``zip_path`` in each of ``infra.package_slim.CATEGORIES`` (none after a slim)."""
    out: dict[str, list[str]] = {}
    with zipfile.ZipFile(zip_path) as z:
        for name in z.namelist():
            category = dropped(name, list(CATEGORIES))
            if category is not None:
                out.setdefault(category, []).append(name)
    return out


def unpinned_functions(sam: dict[str, Any]) -> list[str]:
    """Names of the template's functions whose environment lacks a ``THREAD_ENV`` value."""
    out = []
    for name, res in sorted(sam.get("Resources", {}).items()):
        if res.get("Type") == "AWS::Serverless::Function":
            env = res.get("Properties", {}).get("Environment", {}).get("Variables", {})
            if any(env.get(k) != v for k, v in THREAD_ENV.items()):
                out.append(name)
    return out


def probe(zip_path: Path, sentences: list[str]) -> dict[str, Any]:
    """What ``PROBE`` reports from ``zip_path`` unzipped into an empty folder. Raises
    ``RuntimeError`` with the child's stderr when it fails."""
    with tempfile.TemporaryDirectory(prefix="cairn-package-") as tmp:
        with zipfile.ZipFile(zip_path) as z:
            z.extractall(tmp)
        env = {"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1", **THREAD_ENV}
        r = subprocess.run([sys.executable, "-I", "-S", "-B", "-c", PROBE, tmp], input=json.dumps(sentences),
                           capture_output=True, text=True, env=env, cwd=tmp, timeout=PROBE_TIMEOUT_S,
                           check=False)
        if r.returncode != 0:
            raise RuntimeError(f"the unzipped package failed: {r.stderr.strip()[-2000:]}")
        out: dict[str, Any] = json.loads(r.stdout.strip().splitlines()[-1])
        out["folder"] = tmp
        return out


def vector_problems(found: dict[str, Any], reference: dict[str, Any]) -> list[str]:
    """Each way the probe's result breaks the rules: a path outside the package, no model, or a
    cosine with the reference under ``min_cosine``."""
    folder, out = found["folder"], []
    outside = [p for p in found["sys_path"] if "site-packages" in p or "dist-packages" in p]
    if outside:
        out.append(f"the probe saw installed packages on sys.path: {outside}")
    for key in ("app", "model_dir"):
        if not str(found[key]).startswith(folder):
            out.append(f"{key} came from outside the package: {found[key]}")
    if not found["available"]:
        return [*out, f"the packaged model did not load: {found['reason']}"]
    ref = np.asarray(reference["vectors"], dtype=np.float32)
    for kind in ("queries", "documents"):
        if any(v is None for v in found[kind]):
            out.append(f"{kind}: a reference sentence got no vector")
            continue
        cos = np.einsum("ij,ij->i", np.asarray(found[kind], dtype=np.float32), ref)
        print(f"  {kind}: cosine with the reference min {cos.min():.6f}")
        if cos.min() < reference["min_cosine"]:
            out.append(f"{kind}: cosine {cos.min():.6f} < {reference['min_cosine']} with the reference")
    return out


def check(zip_path: Path, chalice_log: Path | None, sam_path: Path | None) -> list[str]:
    """Every failure of the checks in the module docstring (empty: the package is good)."""
    problems = []
    if chalice_log is not None:
        missing = missing_dependencies(chalice_log.read_text(encoding="utf-8", errors="replace"))
        problems += [f"chalice package could not bundle {m} (no Lambda wheel)" for m in missing]
    zipped, unzipped = sizes(zip_path)
    print(f"package: {zipped / MIB:.1f} MiB zipped ({zipped:,} bytes), "
          f"{unzipped / MIB:.1f} MiB unzipped ({unzipped:,} bytes; limit {MAX_UNZIPPED // MIB} MiB)")
    if unzipped > MAX_UNZIPPED:
        problems.append(f"unzipped {unzipped / MIB:.1f} MiB > {MAX_UNZIPPED // MIB} MiB")
    if zipped > DIRECT_DEPLOY_MAX:
        print(f"  over {DIRECT_DEPLOY_MAX // MIB} MiB zipped: deploy through S3, not `chalice deploy` "
              "(docs/operations.md)")
    for category, names in sorted(leftovers(zip_path).items()):
        problems.append(f"{len(names)} {category} file(s) left in the package, e.g. {names[0]} "
                        "(make package slims it with infra.package_slim)")
    if sam_path is not None:
        bad = unpinned_functions(json.loads(sam_path.read_text()))
        problems += [f"{sam_path.name}: {name} lacks the thread pins {sorted(THREAD_ENV)}" for name in bad]
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    try:
        found = probe(zip_path, reference["sentences"])
    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
        return [*problems, str(exc)]
    print(f"  import app from the package alone: {found['import_app_ms']} ms; zstandard backend "
          f"{found['zstd_backend']}")
    if found["zstd_backend"] != "cext":
        problems.append(f"zstandard loaded its {found['zstd_backend']} backend, not the C extension")
    return problems + vector_problems(found, reference)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m infra.package_check", description=__doc__.split("\n\n")[0])
    ap.add_argument("zip", type=Path, help="the deployment package (build/deployment.zip)")
    ap.add_argument("--chalice-log", type=Path, help="what `chalice package` printed")
    ap.add_argument("--sam", type=Path, help="the template `chalice package` wrote (build/sam.json)")
    args = ap.parse_args(argv)
    problems = check(args.zip, args.chalice_log, args.sam)
    for p in problems:
        print(f"make package: {p}", file=sys.stderr)
    if not problems:
        print("package check: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
