"""One compute thread per process: the variables that pin OpenBLAS (numpy's), OpenMP, MKL and the
``tokenizers`` thread pool.

numpy's OpenBLAS starts a thread per core when it loads, and the embedder's small matrix products
then spend more time waking threads than multiplying (a 16-token query: ~35 ms on one thread,
370-450 ms with the default on a busy 2-core machine). The variables act only when set before
numpy is first imported, so each entry point sets them first: Lambda through
``.chalice/config.json`` (every stage; tests/unit/test_semantic_model.py checks it), the local
stack (``infra.local.stack``, inherited by ``chalice local``), the test session (the root
``conftest.py``) and the benchmarks (``bench``).
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

THREAD_ENV = {
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def pin(environ: MutableMapping[str, str] = os.environ) -> None:
    """Set ``THREAD_ENV`` in ``environ`` (this process's environment by default)."""
    environ.update(THREAD_ENV)
