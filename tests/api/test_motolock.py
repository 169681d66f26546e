"""The local backend's transaction wrapper keeps DynamoDB's all-or-nothing semantics."""

import contextlib

import boto3
import pytest
from botocore.exceptions import ClientError


def test_cancelled_transaction_restores_every_item(aws):
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    table = aws["CAIRN_TABLE_PREFIX"] + "idempotency"
    ddb.put_item(TableName=table, Item={"key": {"S": "kept"}, "v": {"S": "before"}})
    with pytest.raises(ClientError) as exc:
        ddb.transact_write_items(TransactItems=[
            {"Put": {"TableName": table, "Item": {"key": {"S": "new"}, "v": {"S": "x"}}}},
            {"Update": {"TableName": table, "Key": {"key": {"S": "kept"}}, "UpdateExpression": "SET v = :v",
                        "ExpressionAttributeValues": {":v": {"S": "after"}}}},
            {"Put": {"TableName": table, "Item": {"key": {"S": "kept2"}}, "ConditionExpression": "attribute_exists(#k)",
                     "ExpressionAttributeNames": {"#k": "key"}}},
        ])
    assert exc.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert "Item" not in ddb.get_item(TableName=table, Key={"key": {"S": "new"}})
    assert ddb.get_item(TableName=table, Key={"key": {"S": "kept"}})["Item"]["v"] == {"S": "before"}
    assert "Item" not in ddb.get_item(TableName=table, Key={"key": {"S": "kept2"}})


def test_committed_transaction_applies_every_item(aws):
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    table = aws["CAIRN_TABLE_PREFIX"] + "idempotency"
    ddb.transact_write_items(TransactItems=[
        {"Put": {"TableName": table, "Item": {"key": {"S": "a"}}}},
        {"Put": {"TableName": table, "Item": {"key": {"S": "b"}}}},
    ])
    assert all("Item" in ddb.get_item(TableName=table, Key={"key": {"S": k}}) for k in "ab")


def test_a_partition_query_answers_as_before_page_by_page(aws):
    """The one-partition Query view: every key condition, both directions, filters, projections
    and pages give the items, counts and cursors of a Query over the whole table."""
    from moto.dynamodb.models.table import Table

    from infra.local import motolock
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    table = aws["CAIRN_TABLE_PREFIX"] + "memories"
    for bank in ("a", "b", "c"):
        for i in range(40):
            item = {"bank_key": {"S": bank}, "sk": {"S": f"{'~n/' if i % 5 == 0 else 'fp'}{i:03d}"}}
            if i % 5:
                item["record"] = {"S": "x" * (i * 50)}
            ddb.put_item(TableName=table, Item=item)
    conditions = [("bank_key = :b", {}), ("bank_key = :b AND sk < :h", {":h": {"S": "fp020"}}),
                  ("bank_key = :b AND sk BETWEEN :l AND :h", {":l": {"S": "fp007"}, ":h": {"S": "fp031"}}),
                  ("bank_key = :b AND sk >= :l", {":l": {"S": "fp030"}}),
                  ("bank_key = :b AND begins_with(sk, :p)", {":p": {"S": "~n/"}})]

    def pages(**kw):
        out, start = [], None
        while True:
            res = ddb.query(**kw, **({"ExclusiveStartKey": start} if start else {}))
            out.append((res["Items"], res["Count"], res["ScannedCount"], res.get("LastEvaluatedKey")))
            start = res.get("LastEvaluatedKey")
            if not start:
                return out

    patched = Table.query
    for cond, values in conditions:
        for forward in (True, False):
            for extra in ({}, {"FilterExpression": "attribute_exists(#r)", "ProjectionExpression": "sk, #r",
                               "ExpressionAttributeNames": {"#r": "record"}}, {"Limit": 7}):
                kw = {"TableName": table, "KeyConditionExpression": cond, "ScanIndexForward": forward,
                      "ExpressionAttributeValues": {":b": {"S": "b"}, **values}, **extra}
                got = pages(**kw)
                Table.query = patched.__wrapped__  # moto's own
                try:
                    want = pages(**kw)
                finally:
                    Table.query = patched
                assert got == want, (cond, forward, extra)
                assert all(i["bank_key"] == {"S": "b"} for p in got for i in p[0] if "bank_key" in i)
    assert motolock._installed


def test_responses_are_serialized_byte_for_byte_as_moto_does(aws):
    """The cached alias keys of moto's response serializer: every DynamoDB attribute type,
    nested maps and lists, pages, consumed capacity, unprocessed keys, table descriptions, a
    cancelled condition's old item, and S3 and SQS answers are the bytes moto's own path gives."""
    from moto.core.serialize import ResponseSerializer

    patched = ResponseSerializer.get_value
    assert hasattr(patched, "__wrapped__"), "motolock no longer speeds up moto's serializer"
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    s3 = boto3.client("s3", region_name="us-east-1")
    sqs = boto3.client("sqs", region_name="us-east-1")
    ddb.create_table(TableName="shapes", BillingMode="PAY_PER_REQUEST",
                     KeySchema=[{"AttributeName": "p", "KeyType": "HASH"}, {"AttributeName": "s", "KeyType": "RANGE"}],
                     AttributeDefinitions=[{"AttributeName": n, "AttributeType": t} for n, t in
                                           (("p", "S"), ("s", "S"), ("g", "N"))],
                     GlobalSecondaryIndexes=[{"IndexName": "by_g", "Projection": {"ProjectionType": "ALL"},
                                              "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}]}])
    for i in range(12):
        ddb.put_item(TableName="shapes", Item={
            "p": {"S": "a" if i % 3 else "b"}, "s": {"S": f"{i:03d}"}, "g": {"N": str(i % 2)},
            "b": {"B": bytes([i, 255, 0])}, "ss": {"SS": ["x", f"y{i}"]}, "ns": {"NS": ["1", "2.5"]},
            "bs": {"BS": [b"\x00", bytes([i])]}, "nul": {"NULL": True}, "t": {"BOOL": i % 2 == 0},
            "m": {"M": {"Message": {"S": "m"}, "S": {"N": "7"}, "Item": {"L": [{"S": "l"}, {"M": {"k": {"B": b"k"}}}]},
                        "a.b": {"S": "dotted name"}}},
            "Count": {"S": "an attribute named like a response member"}})
    s3.create_bucket(Bucket="shapes")
    s3.put_object(Bucket="shapes", Key="k/one", Body=b"1", Metadata={"m": "v"})
    queue = sqs.create_queue(QueueName="shapes", Attributes={"VisibilityTimeout": "31"})["QueueUrl"]
    key = {"p": {"S": "a"}, "s": {"S": "001"}}
    reads = [
        lambda: ddb.get_item(TableName="shapes", Key=key, ReturnConsumedCapacity="TOTAL"),
        lambda: ddb.get_item(TableName="shapes", Key={"p": {"S": "a"}, "s": {"S": "none"}}),
        lambda: ddb.query(TableName="shapes", KeyConditionExpression="p = :p", Limit=3,
                          ReturnConsumedCapacity="INDEXES", ExpressionAttributeValues={":p": {"S": "a"}}),
        lambda: ddb.query(TableName="shapes", IndexName="by_g", KeyConditionExpression="g = :g",
                          ExpressionAttributeValues={":g": {"N": "1"}}, ProjectionExpression="p, s, m.Item"),
        lambda: ddb.scan(TableName="shapes", FilterExpression="t = :t",
                         ExpressionAttributeValues={":t": {"BOOL": True}}),
        lambda: ddb.batch_get_item(RequestItems={"shapes": {"Keys": [{"p": {"S": "b"}, "s": {"S": f"{i:03d}"}}
                                                                    for i in (0, 3, 4)]}}),
        lambda: ddb.transact_get_items(TransactItems=[{"Get": {"TableName": "shapes",
                                                               "Key": {"p": {"S": "b"}, "s": {"S": "000"}}}}]),
        lambda: ddb.describe_table(TableName="shapes"),
        lambda: ddb.list_tables(),
        lambda: ddb.put_item(TableName="shapes", Item=key, ConditionExpression="attribute_not_exists(p)",
                             ReturnValuesOnConditionCheckFailure="ALL_OLD"),
        lambda: s3.list_objects_v2(Bucket="shapes"),
        lambda: s3.head_object(Bucket="shapes", Key="k/one"),
        lambda: sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["All"]),
    ]
    bodies: list[bytes] = []
    for client in (ddb, s3, sqs):
        client.meta.events.register("after-call", lambda http_response, **_: bodies.append(http_response.content))

    def read(call):
        del bodies[:]
        with contextlib.suppress(ClientError):
            call()
        return list(bodies)

    for call in reads:
        got = read(call)
        ResponseSerializer.get_value = patched.__wrapped__  # moto's own
        try:
            want = read(call)
        finally:
            ResponseSerializer.get_value = patched
        assert got and got == want, (got, want)


def test_alias_keys_are_cached_per_member_shape_and_parent(aws):
    """The same member name under another shape or parent has other alias keys: a dict holding
    several of them gives, each time, the value moto's own lookup picks."""
    from botocore.model import ShapeResolver
    from moto.core.serialize import JSONSerializer, ResponseSerializer, XFormedAttributePicker
    from moto.core.utils import get_service_model

    resolver = ShapeResolver({
        "One": {"type": "structure", "members": {"Data": {"shape": "Payload"}}},
        "Two": {"type": "structure", "members": {"Data": {"shape": "Other"}}},
        "Three": {"type": "structure", "members": {"Data": {"shape": "Payload"}, "Payload": {"shape": "Text"}}},
        "Payload": {"type": "structure", "members": {}}, "Other": {"type": "structure", "members": {}},
        "Text": {"type": "string"}})
    serializer = JSONSerializer(get_service_model("dynamodb").operation_model("GetItem"),
                                value_picker=XFormedAttributePicker())
    obj = {"Data": "data", "Payload": "payload", "Other": "other"}
    patched = ResponseSerializer.get_value

    def pick(get_value):
        out = []
        for parent in ("One", "Two", "Three", "One"):
            outer = resolver.get_shape_by_name(parent)
            member = outer.members["Data"]
            member.parent = outer  # as moto's serializer sets it
            out.append(get_value(serializer, obj, "Data", member))
        return out

    assert pick(patched) == pick(patched.__wrapped__) == ["payload", "other", "data", "payload"]
