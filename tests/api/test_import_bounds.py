"""Import files have a bound checked before they are read, and their lines are streamed.

An upload's size is read with a HEAD (``Settings.import_upload_max_bytes``): over it, 413
``payload_too_large`` before one byte is fetched, and nothing is written; at or under it, the
object is read in chunks and cut into lines as they arrive. Inline bodies (bank and structured
imports) have their own bound (``Settings.import_inline_bytes``) and are cut into lines lazily too.
"""

from __future__ import annotations

import json

import boto3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.errors import PayloadTooLarge
from chalicelib.storage import blobs
from tests.api.state import assert_unchanged, dump

ND = {"Content-Type": "application/x-ndjson"}


def _file(n_bytes: int) -> tuple[bytes, int]:
    """Valid memory lines, then blank lines (which count as nothing), of exactly ``n_bytes``
    bytes; and how many memory lines."""
    lines: list[bytes] = []
    while True:
        line = (json.dumps({"text": f"bounded import line {len(lines)}"}) + "\n").encode()
        if sum(map(len, lines)) + len(line) > n_bytes:
            break
        lines.append(line)
    data = b"".join(lines)
    return data + b"\n" * (n_bytes - len(data)), len(lines)


def _upload(api, aws, bank: str, data: bytes) -> str:
    s, up = api.post(f"/v1/banks/{bank}/import-uploads")
    assert s == 200
    boto3.client("s3", region_name="us-east-1").put_object(
        Bucket=aws["CAIRN_BUCKET"], Key="default/" + up["s3_key"], Body=data)
    return up["s3_key"]


@pytest.fixture
def gets():
    """The GetObject calls the service's S3 client makes during a test."""
    calls: list[str] = []

    def count(params, **_kw):
        calls.append(params["Key"])

    events = blobs.s3().meta.events
    events.register("provide-client-params.s3.GetObject", count)
    yield calls
    events.unregister("provide-client-params.s3.GetObject", count)


def test_an_upload_over_the_bound_is_refused_before_it_is_read(api, aws, monkeypatch, gets):
    monkeypatch.setenv("CAIRN_IMPORT_UPLOAD_MAX_BYTES", "2000")
    key = _upload(api, aws, "big", _file(2001)[0])
    before = dump()
    s, b = api.post("/v1/banks/big/import", {"s3_key": key})
    assert (s, b["code"]) == (413, "payload_too_large"), b
    assert b["details"] == {"limit_bytes": 2000, "size_bytes": 2001} and "split it" in b["error"]
    assert gets == []  # its size came from a HEAD: not one byte was fetched
    assert api.get("/v1/banks/big")[0] == 404  # nothing imported, not even the bank
    # the file, which can never be imported, is gone; nothing else changed
    before["s3"] = {k: v for k, v in before["s3"].items() if not k.endswith(key)}
    assert_unchanged(before)


@pytest.mark.parametrize(("offset", "status"), [(-1, 200), (0, 200), (1, 413), (40_000, 413)])
def test_each_import_path_holds_its_bound(api, aws, monkeypatch, offset, status):
    """The class: an upload, an inline bank import and an inline structured import, each at its
    bound plus ``offset`` bytes, are imported under it and refused with nothing written over it."""
    cap = 3000
    monkeypatch.setenv("CAIRN_IMPORT_UPLOAD_MAX_BYTES", str(cap))
    monkeypatch.setenv("CAIRN_IMPORT_INLINE_BYTES", str(cap))
    data, n = _file(cap + offset)
    key = _upload(api, aws, "up", data)
    s, b = api.post("/v1/banks/up/import", {"s3_key": key})
    assert s == status, b
    assert (b["imported"] == n) if s == 200 else (api.get("/v1/banks/up")[0] == 404)
    before = dump()
    s, b = api.post("/v1/banks/inl/import", raw=data, headers=ND)
    assert s == status, b
    if s == 413:
        assert_unchanged(before)
    rows = "".join(json.dumps({"name": f"row_{i}", "type": "general", "scope": "global", "content": "x"}) + "\n"
                   for i in range(200)).encode()[: cap + offset]
    before = dump()
    s, b = api.post("/v1/api/admin/memories/import", raw=rows, headers=ND)
    assert (s == 413) == (status == 413), b
    if s == 413:
        assert_unchanged(before)


def _chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=40).map(lambda b: bytes(b"ab\r\n"[x % 4] for x in b)),
       st.lists(st.integers(min_value=0, max_value=40), max_size=6))
def test_streamed_lines_are_the_files_lines_however_it_is_chunked(data, cuts):
    from chalicelib.core.ndjson import lines_of
    assert list(lines_of(_chunked(data, cuts))) == data.splitlines()


def test_a_line_is_given_before_the_rest_of_the_file_is_read():
    from chalicelib.core.ndjson import lines_of
    read: list[bytes] = []

    def chunks():
        for c in (b'{"text": "one"}\n{"te', b'xt": "two"}\n', b"tail"):
            read.append(c)
            yield c
    lines = lines_of(chunks())
    assert next(lines) == b'{"text": "one"}' and len(read) == 1
    assert list(lines) == [b'{"text": "two"}', b"tail"]


def test_a_file_that_grows_past_the_bound_while_read_is_refused():
    from chalicelib.core.ndjson import lines_of
    with pytest.raises(PayloadTooLarge):
        list(lines_of([b"a\n" * 10, b"b\n" * 10], max_bytes=30))


def test_an_imports_lines_are_held_small_until_their_batch_is_written():
    """Every id's winning line is kept until the writes (the newest line of an id wins), but as its
    bytes and a few fields, not as a parsed record (kilobytes each: 32 MB of short lines took 800 MB)."""
    import tracemalloc

    from chalicelib.banks import transfer
    from chalicelib.core.ndjson import lines_of
    data = b"".join((json.dumps({"text": f"Imported memory number {i} about coffee"}) + "\n").encode()
                    for i in range(5000))
    chunks = [data[k:k + 65536] for k in range(0, len(data), 65536)]
    tracemalloc.start()
    try:
        winners = transfer._winners(lines_of(chunks), transfer.ImportResult(), 0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(winners) == 5000
    assert peak < 12 * len(data), peak / len(data)  # parsed records held: about 40 times the file
