"""The local stack's persistence (infra/local/stack.py): every DynamoDB item and S3 object is
saved to one file and loaded back; a save that raced a write is not kept."""

from __future__ import annotations

import boto3
from moto import mock_aws

from infra.local.resources import create_resources
from infra.local.stack import Changes, StateStore, _decode, _encode

from .conftest import STACK


def test_binary_values_round_trip():
    item = {"k": {"S": "x"}, "b": {"B": b"\x00\xff"}, "bs": {"BS": [b"a", b"\x01"]},
            "m": {"M": {"inner": {"B": b"\x02"}}}, "l": {"L": [{"B": b"\x03"}, {"N": "1"}]}}
    assert _decode(_encode(item)) == item


def test_save_then_load_restores_items_and_objects(tmp_path):
    table = f"{STACK}-banks"
    rows = [{"org_id": {"S": "o"}, "name": {"S": f"b{i:03d}"}, "blob": {"B": bytes([i % 256])}} for i in range(60)]
    with mock_aws():
        bucket = create_resources(STACK)["CAIRN_BUCKET"]
        ddb, s3 = boto3.client("dynamodb", region_name="us-east-1"), boto3.client("s3", region_name="us-east-1")
        for row in rows:
            ddb.put_item(TableName=table, Item=row)
        s3.put_object(Bucket=bucket, Key="o/banks/b/rules/style.md", Body=b"# hi", ContentType="text/markdown")
        s3.put_object(Bucket=bucket, Key="o/.trash/x/odd name?.md", Body=b"\x00bin")
        assert StateStore(tmp_path, None).save()
    assert (tmp_path / "state.tar.gz").exists() and not list(tmp_path.glob("*.tmp"))

    with mock_aws():  # a brand-new, empty backend
        create_resources(STACK)
        ddb, s3 = boto3.client("dynamodb", region_name="us-east-1"), boto3.client("s3", region_name="us-east-1")
        assert ddb.scan(TableName=table)["Count"] == 0
        assert StateStore(tmp_path, None).load() == {"items": 60, "objects": 2}
        got = ddb.scan(TableName=table)["Items"]
        assert sorted(got, key=lambda r: r["name"]["S"]) == rows
        obj = s3.get_object(Bucket=bucket, Key="o/banks/b/rules/style.md")
        assert obj["Body"].read() == b"# hi" and obj["ContentType"] == "text/markdown"
        assert s3.get_object(Bucket=bucket, Key="o/.trash/x/odd name?.md")["Body"].read() == b"\x00bin"


def test_a_save_that_raced_a_write_is_not_kept(aws, tmp_path):
    changes = Changes()
    store = StateStore(tmp_path, None, changes)
    real = store._snapshot

    def racing():
        data = real()
        changes.bump()  # a write landed while the snapshot was read
        return data

    store._snapshot = racing
    assert store.save(attempts=3) is False
    assert not (tmp_path / "state.tar.gz").exists()
    store._snapshot = real
    assert store.save(attempts=1) is True and (tmp_path / "state.tar.gz").exists()


def test_load_without_a_state_file_loads_nothing(aws, tmp_path):
    assert StateStore(tmp_path, None).load() == {"items": 0, "objects": 0}
