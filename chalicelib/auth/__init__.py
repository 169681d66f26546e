"""Principals, bearer tokens and permissions."""
