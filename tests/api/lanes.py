"""Texts chosen by the write lane their memory falls in (a bank's lanes split by memory id, and a
bank memory's id is its text's fingerprint), and raw rows of the banks table as an operator with
the AWS console sees them."""

from __future__ import annotations

import boto3

from chalicelib.core.store import lane_of
from chalicelib.fingerprint import fingerprint
from chalicelib.settings import get_settings


def word(i: int) -> str:
    """A distinct lower-case word per ``i`` >= 0 (``"wa"``, ``"wb"``, ... ``"wba"``): texts that
    differ only by a number would be a detected number conflict, each linked on save."""
    out = ""
    while True:
        out = "abcdefghijklmnopqrstuvwxyz"[i % 26] + out
        i //= 26
        if not i:
            return "w" + out


def lane_of_text(text: str, lanes: int | None = None) -> int:
    """The lane of the memory ``text`` makes in a bank of ``lanes`` lanes (default: a new bank's)."""
    return lane_of(fingerprint(text), lanes or get_settings().write_lanes)


def same_lane(stem: str, n: int, lanes: int | None = None) -> list[str]:
    """``n`` distinct texts ``"<stem> <word>"`` (``word``) whose memories share one lane."""
    by_lane: dict[int, list[str]] = {}
    i = 0
    while True:
        text = f"{stem} {word(i)}"
        got = by_lane.setdefault(lane_of_text(text, lanes), [])
        got.append(text)
        if len(got) == n:
            return got
        i += 1


def other_lanes(stem: str, n: int, lanes: int | None = None) -> list[str]:
    """``n`` texts ``"<stem> <word>"`` (``word``) whose memories fall in ``n`` different lanes."""
    seen: dict[int, str] = {}
    i = 0
    while len(seen) < n:
        text = f"{stem} {word(i)}"
        seen.setdefault(lane_of_text(text, lanes), text)
        i += 1
    return list(seen.values())


def banks_table() -> str:
    """The banks table's physical name."""
    return get_settings().table_name("banks")


def row_item(org: str, name: str) -> dict:
    """The raw item ``(org, name)`` of the banks table (consistent read), ``{}`` when absent."""
    return boto3.client("dynamodb", region_name="us-east-1").get_item(
        TableName=banks_table(), Key={"org_id": {"S": org}, "name": {"S": name}}, ConsistentRead=True).get("Item", {})


def put_row_item(item: dict) -> None:
    """Write a raw banks-table item back, as a hand edit would."""
    boto3.client("dynamodb", region_name="us-east-1").put_item(TableName=banks_table(), Item=item)
