"""The local stack's durable state (infra/local/durable.py): writes through moto's server are
journaled as after-images and replayed over the snapshot; a torn journal tail is ignored; one
write appends the same bytes whatever the size of the state."""

from __future__ import annotations

import io
import json
import socket
import tarfile

import boto3
import pytest
import requests
from moto import mock_aws

from infra.local import durable
from infra.local.durable import Durable, MotoServer, StateDirBusy, install_hooks, may_write
from infra.local.resources import create_resources, names

from .conftest import STACK

TABLE = f"{STACK}-idempotency"  # hash key only: "key"
BANKS = f"{STACK}-banks"  # hash "org_id", range "name"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """moto's server with the journal, as the launcher runs it (``endpoint``, ``app.durable``)."""

    def __init__(self, state_dir):
        install_hooks()
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.state_dir = state_dir
        self.moto = MotoServer("127.0.0.1", self.port, None)
        self.app = self.moto.app
        self.moto.start()

    @property
    def durable(self) -> Durable:
        return self.app.durable

    def restart(self, log=None) -> dict:
        """What a new launcher does after a kill -9: an empty moto, the template's resources,
        the state dir loaded (not yet journaling: call ``durable.open()``)."""
        if self.durable is not None:
            self.durable.active = False  # the old process is gone
        requests.post(f"{self.endpoint}/moto-api/reset", timeout=10)
        create_resources(STACK, endpoint_url=self.endpoint)
        self.app.durable = Durable(self.state_dir, log=log if log is not None else (lambda _: None))
        return self.durable.load()


@pytest.fixture
def server(tmp_path):
    """A journaling moto server with its state in ``tmp_path/state``. Nothing is compacted at
    the end: the files are what a kill -9 would leave."""
    srv = Server(tmp_path / "state")
    srv.restart()
    srv.durable.open()
    try:
        yield srv
    finally:
        srv.durable.active = False
        srv.moto.stop()


def _clients(srv):
    kw = {"region_name": "us-east-1", "endpoint_url": srv.endpoint}
    return boto3.client("dynamodb", **kw), boto3.client("s3", **kw)


def _state(ddb, s3, bucket):
    """Everything a test wrote: items of both tables, and objects with body, type, metadata and
    modification time."""
    items = {t: sorted(ddb.scan(TableName=t, ConsistentRead=True)["Items"], key=repr) for t in (TABLE, BANKS)}
    objects = {}
    for obj in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
        got = s3.get_object(Bucket=bucket, Key=obj["Key"])
        objects[obj["Key"]] = (got["Body"].read(), got["ContentType"], got["Metadata"], got["LastModified"])
    return {"items": items, "objects": objects}


def test_every_kind_of_write_survives_a_crash_and_replays(server):
    d = server.durable
    ddb, s3 = _clients(server)
    bucket = names(STACK)["CAIRN_BUCKET"]
    binary = {"key": {"S": "bin"}, "b": {"B": b"\x00\xff"}, "bs": {"BS": [b"a", b"\x01"]},
              "m": {"M": {"B": {"S": "an attribute named B"}, "inner": {"B": b"\x02"}}},
              "l": {"L": [{"N": "1"}, {"M": {"x": {"BOOL": True}}}, {"NULL": True}, {"SS": ["a", "b"]}]},
              "ns": {"NS": ["1", "2.5"]}, "ss": {"SS": ["x", "y"]}}
    ddb.put_item(TableName=TABLE, Item=binary)
    ddb.put_item(TableName=TABLE, Item={"key": {"S": "gone"}})
    ddb.delete_item(TableName=TABLE, Key={"key": {"S": "gone"}})
    ddb.put_item(TableName=TABLE, Item={"key": {"S": "counter"}, "n": {"N": "1"}})
    ddb.update_item(TableName=TABLE, Key={"key": {"S": "counter"}}, UpdateExpression="ADD n :one",
                    ExpressionAttributeValues={":one": {"N": "41"}})
    ddb.batch_write_item(RequestItems={BANKS: [{"PutRequest": {"Item": {"org_id": {"S": "o"}, "name": {"S": f"b{i}"}}}}
                                               for i in range(5)]})
    ddb.transact_write_items(TransactItems=[
        {"Put": {"TableName": TABLE, "Item": {"key": {"S": "txn"}}}},
        {"Delete": {"TableName": BANKS, "Key": {"org_id": {"S": "o"}, "name": {"S": "b0"}}}}])
    with pytest.raises(ddb.exceptions.TransactionCanceledException):  # cancelled: nothing of it kept
        ddb.transact_write_items(TransactItems=[
            {"Put": {"TableName": TABLE, "Item": {"key": {"S": "never"}}}},
            {"Put": {"TableName": TABLE, "Item": {"key": {"S": "txn"}},
                     "ConditionExpression": "attribute_not_exists(#k)", "ExpressionAttributeNames": {"#k": "key"}}}])
    s3.put_object(Bucket=bucket, Key="o/banks/b/rules/style.md", Body=b"# hi", ContentType="text/markdown",
                  Metadata={"who": "me"})
    s3.put_object(Bucket=bucket, Key="o/odd name?.bin", Body=bytes(range(256)) * 100)
    s3.copy_object(Bucket=bucket, Key="o/copy.md", CopySource={"Bucket": bucket, "Key": "o/banks/b/rules/style.md"})
    s3.put_object(Bucket=bucket, Key="o/deleted", Body=b"x")
    s3.delete_object(Bucket=bucket, Key="o/deleted")
    d.compact()  # part of the state in the snapshot, the rest in the next journal
    s3.put_object(Bucket=bucket, Key="o/after-compaction", Body=b"late")
    ddb.put_item(TableName=TABLE, Item={"key": {"S": "late"}})
    before = _state(ddb, s3, bucket)
    assert "never" not in repr(before["items"]) and "o/deleted" not in before["objects"]
    assert [n for n, _ in d.journals()] == [1]

    loaded = server.restart()
    assert loaded["journal_records"] == 2
    assert _state(ddb, s3, bucket) == before


def test_a_torn_journal_tail_is_ignored_and_later_writes_still_replay(server):
    ddb, _ = _clients(server)
    for i in range(3):
        ddb.put_item(TableName=TABLE, Item={"key": {"S": f"k{i}"}})
    (_, path), = server.durable.journals()
    path.write_bytes(path.read_bytes()[:-7])  # a crash in the middle of appending the third record

    lines = []
    loaded = server.restart(lines.append)
    assert loaded["journal_records"] == 2
    assert {i["key"]["S"] for i in ddb.scan(TableName=TABLE)["Items"]} == {"k0", "k1"}
    assert any("damaged record" in line for line in lines)

    # journaling resumes in a new file (after a compaction), not behind the damaged frame
    server.durable.open()
    assert not path.exists()
    ddb.put_item(TableName=TABLE, Item={"key": {"S": "k9"}})
    server.restart()
    assert {i["key"]["S"] for i in ddb.scan(TableName=TABLE)["Items"]} == {"k0", "k1", "k9"}


def test_a_corrupt_record_ends_replay_of_its_file(tmp_path):
    good = durable.encode_record([{"op": "x"}])
    bad = bytearray(durable.encode_record([{"op": "y"}]))
    bad[-1] ^= 0xFF  # checksum no longer matches
    path = tmp_path / "journal-000000.bin"
    path.write_bytes(good + bytes(bad) + good)
    records, damaged = durable.read_records(path)
    assert [ops for ops, _ in records] == [[{"op": "x"}]] and damaged == len(good)


def test_one_write_appends_the_same_bytes_whatever_the_stored_state(server):
    ddb, _ = _clients(server)
    (_, path), = server.durable.journals()

    def appended(key):
        size = path.stat().st_size
        ddb.put_item(TableName=TABLE, Item={"key": {"S": key}, "v": {"S": "x" * 100}})
        return path.stat().st_size - size

    first = appended("probe-a")
    for chunk in range(0, 2000, 25):
        ddb.batch_write_item(RequestItems={TABLE: [{"PutRequest": {"Item": {"key": {"S": f"fill{i:05d}"}}}}
                                                   for i in range(chunk, chunk + 25)]})
    assert appended("probe-b") == first  # an after-image of the item, not an export of the table


def test_reads_do_not_take_the_write_lock():
    assert not may_write({"REQUEST_METHOD": "GET"})
    assert not may_write({"REQUEST_METHOD": "POST", "HTTP_X_AMZ_TARGET": "DynamoDB_20120810.Query"})
    assert not may_write({"REQUEST_METHOD": "POST", "HTTP_X_AMZ_TARGET": "AmazonSQS.ReceiveMessage"})
    assert may_write({"REQUEST_METHOD": "POST", "HTTP_X_AMZ_TARGET": "DynamoDB_20120810.TransactWriteItems"})
    assert may_write({"REQUEST_METHOD": "PUT"})  # S3 PutObject
    assert may_write({"REQUEST_METHOD": "POST", "HTTP_X_AMZ_TARGET": "DynamoDB_20120810.SomethingNew"})


def test_one_stack_per_state_dir(tmp_path):
    first = Durable(tmp_path)
    first.acquire()
    with pytest.raises(StateDirBusy):
        Durable(tmp_path).acquire()


def test_fresh_discards_the_saved_state(tmp_path):
    for name in ("snapshot.bin", "journal-000003.bin", "state.tar.gz"):
        (tmp_path / name).write_bytes(b"x")
    Durable(tmp_path).discard()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def _legacy_tar(path, table, rows, objects):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        def add(name, data):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        add(f"dynamodb/{table}.jsonl", "".join(json.dumps(r) + "\n" for r in rows).encode())
        index = []
        for i, (bucket, key, body) in enumerate(objects):
            add(f"s3/objects/{i}", body)
            index.append({"bucket": bucket, "key": key, "member": f"s3/objects/{i}", "content_type": "text/markdown"})
        add("s3/index.jsonl", "".join(json.dumps(e) + "\n" for e in index).encode())
    path.write_bytes(buf.getvalue())


def test_an_export_of_the_earlier_version_is_imported_once(tmp_path):
    rows = [{"org_id": {"S": "o"}, "name": {"S": "b"}, "blob": {"B": "AP8="}, "m": {"M": {"x": {"B": "AQ=="}}}}]
    with mock_aws():
        bucket = create_resources(STACK)["CAIRN_BUCKET"]
        _legacy_tar(tmp_path / "state.tar.gz", BANKS, rows, [(bucket, "o/banks/b/rules/r.md", b"# r")])
        d = Durable(tmp_path, log=lambda _: None)
        d.acquire()
        d.load()
        d.open()
        ddb, s3 = boto3.client("dynamodb", region_name="us-east-1"), boto3.client("s3", region_name="us-east-1")
        item = ddb.scan(TableName=BANKS)["Items"][0]
        assert item["blob"] == {"B": b"\x00\xff"} and item["m"]["M"]["x"] == {"B": b"\x01"}
        obj = s3.get_object(Bucket=bucket, Key="o/banks/b/rules/r.md")
        assert obj["Body"].read() == b"# r" and obj["ContentType"] == "text/markdown"
        d.close()
    assert not (tmp_path / "state.tar.gz").exists() and (tmp_path / "snapshot.bin").exists()
