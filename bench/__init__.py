"""Benchmarks (``python -m bench``). Importing the package pins BLAS and tokenizer threads to one
(``infra.threads``) before any benchmark loads numpy: every figure is single-threaded, as on Lambda."""

from infra.threads import pin

pin()
