"""Run the local stack the way ``make run`` does (``python -m infra.local.stack``) for tests."""

from __future__ import annotations

import boto3

from infra.local.launch import ROOT, StackProcess

__all__ = ["ROOT", "LocalStack"]


class LocalStack(StackProcess):
    """``infra.local.launch.StackProcess`` plus the checks the API does not expose."""

    def dynamodb(self):
        """A boto3 DynamoDB client on the stack's moto endpoint (for checks the API does not expose)."""
        return boto3.client("dynamodb", region_name="us-east-1", endpoint_url=self.moto_url,
                            aws_access_key_id="testing", aws_secret_access_key="testing")

    def bank_seq(self, bank: str, org: str = "default") -> int:
        """The changes the bank committed: its row's ``seq`` plus its lane rows' (consistent
        reads), 0 when the bank does not exist."""
        ddb = self.dynamodb()
        item = ddb.get_item(TableName="cairn-local-banks", ConsistentRead=True,
                            Key={"org_id": {"S": org}, "name": {"S": bank}}).get("Item")
        if not item:
            return 0
        lanes = ddb.query(TableName="cairn-local-banks", ConsistentRead=True,
                          KeyConditionExpression="org_id = :o AND begins_with(#n, :p)",
                          ExpressionAttributeNames={"#n": "name"},
                          ExpressionAttributeValues={":o": {"S": org},
                                                     ":p": {"S": f"!lane/{item['incarnation']['S']}/"}})
        return int(item["seq"]["N"]) + sum(int(it["seq"]["N"]) for it in lanes["Items"]
                                           if not it["name"]["S"].endswith("/v"))  # the version item counts writes
