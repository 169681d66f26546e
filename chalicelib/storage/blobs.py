"""S3 access. One bucket; every key starts with the org id, so inside an
org the layout is the design's: ``banks/<bank>/rules/<name>.md``, ``.trash/<id>/...``,
``indexes/<bank>/<seq>.v<format>.tar.zst``, ``exports/...``.

An object written with ``expiring=True`` carries the tag ``EXPIRING_TAG``, which the bucket's
lifecycle rule ``expiring`` (``infra/template.json``, applied to the local bucket too) deletes
``EXPIRING_DAYS`` after it was written: exports, whose links live shorter than that.

The boto3 client is created lazily per (region, endpoint) and honours ``AWS_ENDPOINT_URL``
(moto's server locally).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from ..settings import get_settings

_lock = threading.Lock()
_clients: dict[tuple, object] = {}
EXPIRING_TAG = ("cairn-retention", "expiring")
EXPIRING_DAYS = 1


def _client(service: str):
    settings = get_settings()
    # AWS_ENDPOINT_URL* are boto's own variables, not Cairn settings: boto reads them when it
    # builds the client, so the cache is keyed on them too (moto and the local stack set them)
    key = (service, settings.region, os.environ.get("AWS_ENDPOINT_URL", ""),
           os.environ.get(f"AWS_ENDPOINT_URL_{service.upper()}", ""))
    client = _clients.get(key)
    if client is None:
        with _lock:
            client = _clients.get(key)
            if client is None:
                client = boto3.client(service, region_name=settings.region,
                                      config=Config(retries={"mode": "standard", "max_attempts": 3},
                                                    connect_timeout=3, read_timeout=20))
                _clients[key] = client
    return client


def s3():
    """The shared S3 client."""
    return _client("s3")


def sqs():
    """The shared SQS client."""
    return _client("sqs")


def fifo_id(*parts: str) -> str:
    """A FIFO queue's message group or deduplication id naming ``parts``: the SHA-256 hex of their
    JSON list (64 characters, within SQS's 128; distinct parts never join into one id)."""
    return hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()


def bucket() -> str:
    """The data bucket's name."""
    return get_settings().bucket


def org_key(org_id: str, *parts: str) -> str:
    """``<org>/<part>/<part>...``: the S3 key of ``parts`` inside ``org_id``'s prefix."""
    return "/".join((org_id, *parts))


def put_text(key: str, text: str, content_type: str = "text/markdown; charset=utf-8") -> None:
    """Atomically write a UTF-8 object (an S3 PUT replaces whole)."""
    s3().put_object(Bucket=bucket(), Key=key, Body=text.encode("utf-8"), ContentType=content_type)


def put_bytes(key: str, data: bytes, content_type: str = "application/octet-stream", *,
              expiring: bool = False) -> None:
    """Atomically write a binary object; ``expiring``: deleted ``EXPIRING_DAYS`` later (see the
    module)."""
    extra = {"Tagging": f"{EXPIRING_TAG[0]}={EXPIRING_TAG[1]}"} if expiring else {}
    s3().put_object(Bucket=bucket(), Key=key, Body=data, ContentType=content_type, **extra)


def get_bytes(key: str) -> bytes | None:
    """The object's bytes, or ``None`` when it does not exist."""
    try:
        return s3().get_object(Bucket=bucket(), Key=key)["Body"].read()
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            return None
        raise


def size_of(key: str) -> int | None:
    """The object's size in bytes (a HEAD: nothing is read), or ``None`` when it does not exist."""
    try:
        return int(s3().head_object(Bucket=bucket(), Key=key)["ContentLength"])
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
            return None
        raise


def iter_chunks(key: str, chunk_bytes: int = 1024 * 1024) -> Iterator[bytes]:
    """The object's bytes, ``chunk_bytes`` at a time as the GET's body streams them (one chunk in
    memory at once); nothing when it does not exist."""
    try:
        body = s3().get_object(Bucket=bucket(), Key=key)["Body"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            return
        raise
    try:
        yield from body.iter_chunks(chunk_bytes)
    finally:
        body.close()


def delete(key: str) -> None:
    """Delete one object (a missing object is not an error)."""
    s3().delete_object(Bucket=bucket(), Key=key)


def list_objects(prefix: str) -> Iterator[dict]:
    """Every object under ``prefix``: dicts with ``Key``, ``LastModified``, ``ETag``, ``Size``."""
    paginator = s3().get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket(), Prefix=prefix):
        yield from page.get("Contents", [])


def copy(src: str, dst: str) -> None:
    """Server-side copy of one object."""
    s3().copy_object(Bucket=bucket(), Key=dst, CopySource={"Bucket": bucket(), "Key": src})


def move_prefix(src_prefix: str, dst_prefix: str) -> list[str]:
    """Copy every object under ``src_prefix`` to ``dst_prefix``, then delete the originals.
    Copies first, so a failure half-way leaves every object in at least one place.
    Returns the destination keys."""
    moved = []
    objects = list(list_objects(src_prefix))
    for obj in objects:
        dst = dst_prefix + obj["Key"][len(src_prefix):]
        copy(obj["Key"], dst)
        moved.append(dst)
    for obj in objects:
        delete(obj["Key"])
    return moved


def delete_prefix(prefix: str) -> int:
    """Delete every object under ``prefix``; returns how many."""
    n = 0
    for obj in list(list_objects(prefix)):
        delete(obj["Key"])
        n += 1
    return n


def presign_get(key: str, ttl_s: int) -> str:
    """A presigned GET URL for ``key`` valid ``ttl_s`` seconds."""
    return s3().generate_presigned_url("get_object", Params={"Bucket": bucket(), "Key": key}, ExpiresIn=ttl_s)


def presign_put(key: str, ttl_s: int) -> str:
    """A presigned PUT URL for ``key`` valid ``ttl_s`` seconds. No Content-Type is signed, so a
    plain ``curl -T file URL`` works whatever type the client sends."""
    return s3().generate_presigned_url("put_object", Params={"Bucket": bucket(), "Key": key}, ExpiresIn=ttl_s)
