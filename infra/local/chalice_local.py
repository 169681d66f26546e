"""``chalice local`` with a listen backlog fit for concurrent clients: ``python -m infra.local.chalice_local
local --host ... --port ... --stage local --no-autoreload`` (same arguments as the ``chalice`` CLI).

Chalice's local server keeps socketserver's default backlog of 5, so 20 clients connecting at once
get "connection reset by peer". This raises it to 128 (werkzeug's, which moto's server uses) and
then runs Chalice's own CLI unchanged.
"""

from __future__ import annotations

import sys

from chalice import local
from chalice.cli import main

BACKLOG = 128

if __name__ == "__main__":
    local.ThreadedHTTPServer.request_queue_size = BACKLOG
    sys.argv[0] = "chalice"
    sys.exit(main())
