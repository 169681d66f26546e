"""Whole-backend dumps for "nothing was written" assertions.

``dump()`` reads every DynamoDB table (a scan: test code only, never a request path) and every
S3 object of the in-process moto backend into plain, comparable data. ``assert_unchanged(before)``
compares a fresh dump with an earlier one and names the first differing table or key.
"""

from __future__ import annotations

import functools
import json

import boto3

from infra.local import motolock

# Authenticating a token refreshes its last_used_at (at most once per interval): that is the
# read side of a request, not a write the request asked for, so dumps leave it out.
IGNORED = {"tokens": {"last_used_at"}}
# Usage counters count every answered request, reads included (a refused one counts nothing:
# tests/api/test_usage.py), so "nothing was written" compares the rest of the backend.
IGNORED_TABLES = ("usage",)


def _table_items(ddb, name: str) -> list[str]:
    logical = name.rsplit("-", 1)[-1]
    skip = IGNORED.get(logical, set())
    items, kw = [], {"TableName": name, "ConsistentRead": True}
    while True:
        page = ddb.scan(**kw)
        for it in page.get("Items", []):
            items.append(json.dumps({k: v for k, v in it.items() if k not in skip}, sort_keys=True, ensure_ascii=False,
                                    default=lambda b: b.hex()))  # binary attributes (B)
        if "LastEvaluatedKey" not in page:
            return sorted(items)
        kw["ExclusiveStartKey"] = page["LastEvaluatedKey"]


@functools.cache
def clients(region: str = "us-east-1") -> tuple:
    """``(dynamodb, s3)`` boto3 clients for ``dump``, built once per process (creating them is
    most of a dump's cost; moto intercepts clients built before ``mock_aws`` starts too)."""
    session = boto3.session.Session()
    return session.client("dynamodb", region_name=region), session.client("s3", region_name=region)


def dump(using: tuple | None = None) -> dict:
    """``{"ddb": {table: [item json]}, "s3": {bucket/key: bytes}}`` of the whole backend;
    ``using`` = ``clients()`` to reuse clients across dumps."""
    ddb, s3 = using or clients()
    with motolock.lock():
        tables = {t: _table_items(ddb, t) for t in ddb.list_tables()["TableNames"]
                  if t.rsplit("-", 1)[-1] not in IGNORED_TABLES}
    objects = {}
    for b in s3.list_buckets()["Buckets"]:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=b["Name"]):
            for o in page.get("Contents", []):
                objects[f"{b['Name']}/{o['Key']}"] = s3.get_object(Bucket=b["Name"], Key=o["Key"])["Body"].read()
    return {"ddb": tables, "s3": objects}


def assert_unchanged(before: dict, after: dict | None = None) -> dict:
    """Fail, naming the table or object, unless the backend equals ``before``; returns the
    dump it compared with."""
    after = after if after is not None else dump()
    for table in sorted(set(before["ddb"]) | set(after["ddb"])):
        b, a = before["ddb"].get(table, []), after["ddb"].get(table, [])
        if b != a:
            added = sorted(set(a) - set(b))[:3]
            removed = sorted(set(b) - set(a))[:3]
            raise AssertionError(f"table {table} changed: added {added} removed {removed}")
    if before["s3"] != after["s3"]:
        changed = sorted(k for k in set(before["s3"]) | set(after["s3"])
                         if before["s3"].get(k) != after["s3"].get(k))
        raise AssertionError(f"S3 objects changed: {changed[:5]}")
    return after


def contains(data: dict, needle: str) -> list[str]:
    """Where ``needle`` (case-insensitive) occurs in a dump: table names and S3 keys."""
    n = needle.lower()
    hits = [t for t, items in data["ddb"].items() if any(n in i.lower() for i in items)]
    hits += [k for k, v in data["s3"].items() if n in v.decode("utf-8", "replace").lower() or n in k.lower()]
    return hits
