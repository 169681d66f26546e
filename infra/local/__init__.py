"""The local stack (``make run``: ``python -m infra.local.stack``).

Importing this package pins BLAS and tokenizer threads to one (``infra.threads``) before numpy
loads, in the launcher (its workers import the app) and in the ``chalice local`` child, which
inherits the launcher's environment and imports ``infra.local.chalice_local`` itself.
"""

from infra.threads import pin

pin()
