"""Principals, bearer tokens and permissions (issue 2, item 4)."""
