"""Lambda start: ``import app`` against the third-party imports it makes, in fresh processes.

For each setting, alternating, ``--repeat`` times (medians reported):

* ``import app``: a fresh ``python -B`` (nothing written) imports ``app``; it lists the
  third-party modules that import loaded (every module whose file is neither the standard library
  nor this service's ``app.py``/``chalicelib``), in load order;
* third-party alone: another fresh process imports exactly those modules, in that order;
* the ratio of the two (the target: at most 1.3), of wall time and of the processes' CPU time (a
  busy machine stretches wall time; CPU time much less).

Settings: ``checkout`` (this checkout with its virtualenv; bytecode caches written beforehand, as an
installed environment has them) and, when ``build/deployment.zip`` exists (``make package``),
``package`` (the zip unzipped, ``python -I -S -B`` with only it on ``sys.path``, the ``.pyc`` it
ships used) and ``package-source-only`` (the same with every ``__pycache__`` removed: what a
package without ``.pyc`` costs, every module compiled on a read-only ``/var/task``). Also the
package's zipped and unzipped sizes.

``python -m bench.startup [--repeat 5] [--root CHECKOUT] [--package ZIP]`` (another checkout and
zip: the "before" figures, under the same machine's conditions) prints one JSON object; ``make bench`` runs it as the
``startup`` part.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "build" / "deployment.zip"
MIB = 1 << 20

# argv: [root, stdlib dir]; prints {"ms", "cpu_ms", "third_party"}
_APP = r"""
import json, sys, time
root, stdlib = sys.argv[1], sys.argv[2]
if root not in sys.path:
    sys.path.insert(0, root)
t, c = time.perf_counter(), time.process_time()
import app
ms, cpu = (time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000
own = (root + "/app.py", root + "/chalicelib/")
third = [name for name, m in list(sys.modules.items())
         if (f := getattr(m, "__file__", None)) and not f.startswith(own) and not f.startswith(stdlib)]
print(json.dumps({"ms": ms, "cpu_ms": cpu, "third_party": third}))
"""
# argv: [root, json list of modules]; prints {"ms", "cpu_ms"}
_THIRD = r"""
import importlib, json, sys, time
root = sys.argv[1]
if root not in sys.path:
    sys.path.insert(0, root)
names = json.loads(sys.argv[2])
t, c = time.perf_counter(), time.process_time()
for name in names:
    try:
        importlib.import_module(name)
    except Exception:
        pass
print(json.dumps({"ms": (time.perf_counter() - t) * 1000, "cpu_ms": (time.process_time() - c) * 1000}))
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "AWS_DEFAULT_REGION": "us-east-1"})
    return env


def _run(argv: list[str], cwd: Path) -> dict[str, Any]:
    r = subprocess.run(argv, capture_output=True, text=True, env=_env(), cwd=cwd, check=False, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip()[-1500:])
    out: dict[str, Any] = json.loads(r.stdout.strip().splitlines()[-1])
    return out


def measure(root: Path, flags: list[str], repeat: int) -> dict[str, Any]:
    """``import app`` and its third-party imports alone from ``root``, each in a fresh process run
    with ``flags``, alternating ``repeat`` times: medians in ms of wall and of CPU time (the
    process's own: what a busy machine disturbs least), the ratios, the module count."""
    stdlib = sysconfig.get_paths()["stdlib"]
    app_ms, third_ms, app_cpu, third_cpu, count = [], [], [], [], 0
    for _ in range(repeat):
        got = _run([sys.executable, *flags, "-c", _APP, str(root), stdlib], root)
        app_ms.append(got["ms"])
        app_cpu.append(got["cpu_ms"])
        count = len(got["third_party"])
        alone = _run([sys.executable, *flags, "-c", _THIRD, str(root), json.dumps(got["third_party"])], root)
        third_ms.append(alone["ms"])
        third_cpu.append(alone["cpu_ms"])
    a, t = statistics.median(app_ms), statistics.median(third_ms)
    ac, tc = statistics.median(app_cpu), statistics.median(third_cpu)
    return {"import_app_ms": round(a, 1), "third_party_ms": round(t, 1), "ratio": round(a / t, 2),
            "import_app_cpu_ms": round(ac, 1), "third_party_cpu_ms": round(tc, 1), "cpu_ratio": round(ac / tc, 2),
            "third_party_modules": count, "repeat": repeat}


def package_sizes(zip_path: Path) -> dict[str, float]:
    """The package's zipped and unzipped MiB and its ``.pyc`` count."""
    with zipfile.ZipFile(zip_path) as z:
        infos = z.infolist()
    return {"zipped_mib": round(zip_path.stat().st_size / MIB, 1),
            "unzipped_mib": round(sum(i.file_size for i in infos) / MIB, 1),
            "pyc_files": sum(i.filename.endswith(".pyc") for i in infos)}


def run(repeat: int = 5, root: Path = ROOT, package: Path = PACKAGE) -> tuple[dict[str, Any], list[str]]:
    """Every setting the machine allows, for the checkout at ``root`` and the zip ``package``:
    ``(data, markdown lines)``."""
    data: dict[str, Any] = {}
    subprocess.run([sys.executable, "-c", "import app"], cwd=root, env={**_env(), "PYTHONDONTWRITEBYTECODE": ""},
                   check=False, capture_output=True)  # write the checkout's bytecode caches first
    try:
        data["checkout"] = measure(root, ["-B"], repeat)
    except RuntimeError as exc:
        data["checkout"] = {"error": str(exc)}
    if package.exists():
        data["package_size"] = package_sizes(package)
        with tempfile.TemporaryDirectory(prefix="cairn-startup-") as tmp:
            folder = Path(tmp)
            with zipfile.ZipFile(package) as z:
                z.extractall(folder)
            for name, strip in (("package", False), ("package-source-only", True)):
                if strip:
                    for cache in list(folder.rglob("__pycache__")):
                        shutil.rmtree(cache)
                try:
                    data[name] = measure(folder, ["-I", "-S", "-B"], repeat)
                except RuntimeError as exc:
                    data[name] = {"error": str(exc)}
    md = ["## Lambda start: `import app` against its third-party imports alone", "",
          f"Fresh processes, medians of {repeat}, alternating; one BLAS thread; `-B` (nothing written).", "",
          "| setting | import app | third-party alone | ratio | CPU: import app | CPU: third-party | CPU ratio "
          "| third-party modules |", "|---|---|---|---|---|---|---|---|"]
    for name in ("checkout", "package", "package-source-only"):
        d = data.get(name)
        if d is None:
            continue
        if "error" in d:
            md.append(f"| {name} | error: {d['error'][-200:]} | | | | | | |")
            continue
        md.append(f"| {name} | {d['import_app_ms']:.0f} ms | {d['third_party_ms']:.0f} ms | {d['ratio']:.2f}x | "
                  f"{d['import_app_cpu_ms']:.0f} ms | {d['third_party_cpu_ms']:.0f} ms | {d['cpu_ratio']:.2f}x | "
                  f"{d['third_party_modules']} |")
    if "package_size" in data:
        s = data["package_size"]
        md += ["", f"Package (build/deployment.zip): {s['zipped_mib']} MiB zipped, {s['unzipped_mib']} MiB unzipped, "
                   f"{s['pyc_files']} .pyc files."]
    else:
        md += ["", "No build/deployment.zip: run `make package` for the package's figures."]
    return data, md


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="fresh processes per setting and kind (default 5)")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    ap.add_argument("--package", type=Path, default=PACKAGE, help="the zip to measure (default: build/deployment.zip)")
    args = ap.parse_args(argv)
    data, _ = run(args.repeat, args.root.resolve(), args.package.resolve())
    print(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
