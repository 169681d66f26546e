"""Cairn: a serverless memory service for AI agents and their teams.

Packages, one per concern:

- ``settings``: validated configuration, read lazily from the environment.
- ``errors``: the error taxonomy every surface renders as ``{error, code, details?}``.
- ``storage``: pynamodb models, S3 access, transactional retry.
- ``auth``: principals, bearer tokens, permissions.
- ``banks``: memory banks (records, fingerprints, rules, export/import).
- ``api``: Chalice blueprints; the only package that imports Chalice.
"""
