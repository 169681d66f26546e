"""The semantic signal's embedder: one small sentence model shipped with the service.

``embed_query(text)`` and ``embed_documents(texts)`` give unit float32 vectors of ``DIM``
(cosine = dot product) or ``None`` for a text the model does not cover (``covered``) or when the
artifact is absent (``available`` is False: recall then runs lexically and says so). The model
(``MODEL_ID``) loads once per process from ``artifact_dir()``, never from the network.

Window rule: a memory's text is cut to its first ``DOC_WINDOW`` word pieces, a query (a hook's
whole user message included) to its first ``QUERY_WINDOW``; [CLS] and [SEP] count.
Script rule: a text whose letters are less than ``LATIN_MIN`` Latin gets no vector (the model is
English: CJK text would give noise, not meaning).

Calls are serialised by a lock (the forward pass reuses buffers); BLAS threads are pinned to one
by the process environment (``OPENBLAS_NUM_THREADS=1`` and the like in every stage).
"""

from __future__ import annotations

import os
import threading
import unicodedata
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

MODEL_ID = "minilm-l6-v2"
DIM = 384
DOC_WINDOW = 256  # word pieces: the model's max_seq_length
QUERY_WINDOW = 64
LATIN_MIN = 0.5
HEAD_CHARS_PER_PIECE = 8  # a long text is first encoded from this many characters per window piece
DOC_CACHE = 2048  # recent document vectors kept by text (a re-save or a retry embeds nothing)

_lock = threading.Lock()
_model: Any = None
_tokenizer: Any = None
_failed: str | None = None
_docs: OrderedDict[str, np.ndarray] = OrderedDict()


def artifact_dir() -> Path:
    """The model folder: ``CAIRN_MODEL_DIR`` when set, else ``model/`` beside this module (what
    ``make model`` builds and the deployment package carries)."""
    return Path(os.environ.get("CAIRN_MODEL_DIR") or Path(__file__).with_name("model"))


def _load() -> bool:
    global _model, _tokenizer, _failed
    if _model is not None:
        return True
    if _failed is not None:
        return False
    try:
        from tokenizers import Tokenizer

        from .model import MiniLM
        folder = artifact_dir()
        model = MiniLM(folder)
        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tok.no_padding()
        tok.no_truncation()  # tokenizer.json cuts at 128; _ids applies the window rule
    except (OSError, ImportError, ValueError, KeyError) as exc:
        _failed = f"{type(exc).__name__}: {exc}"
        return False
    _model, _tokenizer = model, tok
    return True


def available() -> bool:
    """Whether the model is loaded or loads now (False: recall is lexical, ``unavailable_reason``
    says why)."""
    with _lock:
        return _load()


def unavailable_reason() -> str | None:
    """Why the model did not load (``None`` when it did or was not tried)."""
    return _failed


def covered(text: str) -> bool:
    """Whether the model may embed ``text``: at least ``LATIN_MIN`` of its letters Latin script,
    and at least one letter or digit."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return any(c.isdigit() for c in text)
    latin = sum(unicodedata.name(c, "").startswith("LATIN") for c in letters)
    return latin / len(letters) >= LATIN_MIN


def _ids(text: str, window: int) -> list[int]:
    """``text``'s word-piece ids cut to ``window`` ([CLS] and the closing [SEP] kept)."""
    head = _encode_head(text, window)
    ids = (head if head is not None else _tokenizer.encode(text)).ids
    if len(ids) > window:
        ids = ids[:window - 1] + ids[-1:]
    return list(ids)


def _encode_head(text: str, window: int) -> Any:
    """The encoding of a prefix of a long ``text`` that holds its whole window (``None``: encode it
    all). A word piece never spans whitespace and the tokenizer's normalising is per character, so
    the pieces before the prefix's last space are the whole text's; a 1 MB memory then costs what
    its first few KB do."""
    cut = window * HEAD_CHARS_PER_PIECE
    space = text.rfind(" ", 0, cut) if len(text) > cut else -1
    if space <= 0:
        return None
    enc = _tokenizer.encode(text[:cut])
    last_kept = window - 2  # the window's last piece before [SEP]
    if len(enc.ids) > window and enc.offsets[last_kept][1] <= space:
        return enc
    return None


def _normalise(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(n == 0, 1, n)).astype(np.float32)


def embed_query(text: str) -> np.ndarray | None:
    """``text``'s unit vector (``DIM`` float32) cut to ``QUERY_WINDOW`` word pieces, or ``None``
    (not covered, or no model)."""
    if not covered(text):
        return None
    with _lock:
        if not _load():
            return None
        return _normalise(_model.encode([_ids(text, QUERY_WINDOW)]))[0]


def embed_documents(texts: list[str]) -> list[np.ndarray | None]:
    """Each text's unit vector (``DIM`` float32) cut to ``DOC_WINDOW`` word pieces, or ``None``
    for one not covered (all ``None`` without a model). Texts are batched by length."""
    out: list[np.ndarray | None] = [None] * len(texts)
    with _lock:
        if not _load():
            return out
        todo: dict[str, list[int]] = {}
        for i, t in enumerate(texts):
            if not covered(t):
                continue
            hit = _docs.get(t)
            if hit is not None:
                _docs.move_to_end(t)
                out[i] = hit
            else:
                todo.setdefault(t, []).append(i)
        if todo:
            keys = list(todo)
            vecs = _normalise(_model.encode([_ids(t, DOC_WINDOW) for t in keys]))
            for t, v in zip(keys, vecs, strict=True):
                v.setflags(write=False)
                for i in todo[t]:
                    out[i] = v
                _docs[t] = v
                if len(_docs) > DOC_CACHE:
                    _docs.popitem(last=False)
    return out
