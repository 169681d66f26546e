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
