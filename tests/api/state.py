"""Whole-backend dumps for "nothing was written" assertions.

``dump()`` reads every DynamoDB item and every S3 object of the in-process moto backend into
plain, comparable data: the items straight from moto's tables (what a consistent scan returns,
without a scan's request and response round trip per page), the objects through boto3.
``assert_unchanged(before)`` compares a fresh dump with an earlier one and names the first
differing table or key.
"""

from __future__ import annotations

import functools
import json

import boto3
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends

from infra.local import motolock

# Authenticating a token refreshes its last_used_at (at most once per interval): that is the
# read side of a request, not a write the request asked for, so dumps leave it out.
IGNORED = {"tokens": {"last_used_at"}}
# Usage counters count every answered request, reads included (a refused one counts nothing:
# tests/api/test_usage.py), so "nothing was written" compares the rest of the backend.
IGNORED_TABLES = ("usage",)
# A bank's version item moves whenever a write is acknowledged, a replayed answer's too (readers
# rely on it, ``core.store.bump_versions``): bookkeeping holding no data, left out as well.
VERSION_ITEM = ("!lane/", "/v")


def _table_items(table) -> list[str]:
    """Each item of moto's ``table`` as sorted JSON, in the wire shape (``{"S": ...}``) a scan
    returns; binary values (B) as hex."""
    skip = IGNORED.get(table.name.rsplit("-", 1)[-1], set())
    return sorted(json.dumps({k: v.to_regular_json() for k, v in item.attrs.items() if k not in skip},
                             sort_keys=True, ensure_ascii=False, default=lambda b: b.hex())
                  for item in table.all_items() if not _version_item(item))


def _version_item(item) -> bool:
    name = item.attrs.get("name")
    return is_version_name(name.to_regular_json().get("S", "") if name is not None else "")


def is_version_name(name: object) -> bool:
    """Whether a banks-table sort key ``name`` is a bank's version item (see ``VERSION_ITEM``)."""
    return isinstance(name, str) and name.startswith(VERSION_ITEM[0]) and name.endswith(VERSION_ITEM[1])


@functools.cache
def clients(region: str = "us-east-1") -> tuple:
    """``(dynamodb, s3)`` boto3 clients for ``dump``, built once per process (creating them is
    most of a dump's cost; moto intercepts clients built before ``mock_aws`` starts too)."""
    session = boto3.session.Session()
    return session.client("dynamodb", region_name=region), session.client("s3", region_name=region)


def dump(using: tuple | None = None) -> dict:
    """``{"ddb": {table: [item json]}, "s3": {bucket/key: bytes}}`` of the whole backend;
    ``using`` = ``clients()`` to reuse clients across dumps."""
    _, s3 = using or clients()
    backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][s3.meta.region_name]
    with motolock.lock():
        tables = {name: _table_items(table) for name, table in backend.tables.items()
                  if name.rsplit("-", 1)[-1] not in IGNORED_TABLES}
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


def plain(v) -> object:
    """A moto ``DynamoType`` as a plain value (maps and lists walked)."""
    if v.type == "M":
        return {k: plain(i) for k, i in v.value.items()}
    if v.type == "L":
        return [plain(i) for i in v.value]
    return None if v.type == "NULL" else v.value


def contains(data: dict, needle: str) -> list[str]:
    """Where ``needle`` (case-insensitive) occurs in a dump: table names and S3 keys."""
    n = needle.lower()
    hits = [t for t, items in data["ddb"].items() if any(n in i.lower() for i in items)]
    hits += [k for k, v in data["s3"].items() if n in v.decode("utf-8", "replace").lower() or n in k.lower()]
    return hits
