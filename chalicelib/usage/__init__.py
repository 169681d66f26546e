"""Usage: what each org, bank or space and token uses (counters by UTC hour), and the limits that
bound it (token-bucket rate limits, quotas). Storage: the ``usage`` table (``storage.tables.UsageModel``)."""
