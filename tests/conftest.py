"""Suite-wide defaults: tests send bursts of hundreds of requests from one token, so the per-token
rate limit is off unless a test turns it on (``monkeypatch.setenv("CAIRN_RATE_REQUESTS_PER_MINUTE",
...)``). Local stacks the e2e tests start inherit it through the environment."""

from __future__ import annotations

import os

os.environ.setdefault("CAIRN_RATE_REQUESTS_PER_MINUTE", "0")
