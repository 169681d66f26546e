"""The local backend's transaction wrapper keeps DynamoDB's all-or-nothing semantics."""

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
