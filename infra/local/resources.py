"""Create the template's DynamoDB tables, S3 bucket and SQS queues on a moto backend.

The local stack and the tests both call ``create_resources``; it reads ``infra/template.json``,
the same definitions CloudFormation deploys, so the two cannot drift apart.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any

import boto3

TEMPLATE = Path(__file__).resolve().parent.parent / "template.json"
LOCAL_ACCOUNT = "123456789012"  # moto's default account id


def load_template() -> dict[str, Any]:
    """The parsed CloudFormation template."""
    return json.loads(TEMPLATE.read_text())


def resolve(value: Any, stack: str, account: str = LOCAL_ACCOUNT, region: str = "us-east-1") -> Any:
    """Resolve the ``Fn::Sub`` strings the template's resource names use (local names only)."""
    if isinstance(value, dict) and "Fn::Sub" in value:
        text = value["Fn::Sub"]
        subs = {"AWS::StackName": stack, "AWS::AccountId": account, "AWS::Region": region}
        return re.sub(r"\$\{([^}]+)\}", lambda m: subs[m.group(1)], text)
    return value


def resources_of(kind: str) -> dict[str, dict[str, Any]]:
    """``{logical id: properties}`` of every template resource of CloudFormation type ``kind``."""
    return {k: r.get("Properties", {}) for k, r in load_template()["Resources"].items() if r.get("Type") == kind}


def names(stack: str, region: str = "us-east-1") -> dict[str, str]:
    """The settings a local stack named ``stack`` needs: ``CAIRN_TABLE_PREFIX``, ``CAIRN_BUCKET``."""
    bucket = resolve(resources_of("AWS::S3::Bucket")["DataBucket"]["BucketName"], stack, region=region)
    return {"CAIRN_TABLE_PREFIX": f"{stack}-", "CAIRN_BUCKET": bucket, "CAIRN_REGION": region}


_RULE_KEYS = {"Id", "Status", "Prefix", "TagFilters", "ExpirationInDays", "NoncurrentVersionExpiration"}


def lifecycle_rule(rule: dict[str, Any]) -> dict[str, Any]:
    """A template's S3 lifecycle rule (CloudFormation's shape) in the S3 API's shape, so the local
    bucket keeps the same rules. ``ValueError`` for a property this translation does not know."""
    unknown = set(rule) - _RULE_KEYS
    if unknown:
        raise ValueError(f"lifecycle rule {rule.get('Id')}: no local translation for {sorted(unknown)}")
    tags = [{"Key": t["Key"], "Value": t["Value"]} for t in rule.get("TagFilters", [])]
    prefix = rule.get("Prefix", "")
    if tags and (prefix or len(tags) > 1):
        rule_filter: dict[str, Any] = {"And": {"Prefix": prefix, "Tags": tags}}
    else:
        rule_filter = {"Tag": tags[0]} if tags else {"Prefix": prefix}
    out: dict[str, Any] = {"ID": rule["Id"], "Status": rule["Status"], "Filter": rule_filter}
    if "ExpirationInDays" in rule:
        out["Expiration"] = {"Days": rule["ExpirationInDays"]}
    if "NoncurrentVersionExpiration" in rule:
        out["NoncurrentVersionExpiration"] = {"NoncurrentDays": rule["NoncurrentVersionExpiration"]["NoncurrentDays"]}
    return out


_SESSION: boto3.session.Session | None = None
_CLIENTS: dict[tuple, object] = {}


def _client(service: str, **kw):
    # One session and one client per endpoint: building them re-reads service models from disk.
    global _SESSION
    if _SESSION is None:
        _SESSION = boto3.session.Session()
    key = (service, tuple(sorted(kw.items())))
    if key not in _CLIENTS:
        _CLIENTS[key] = _SESSION.client(service, **kw)
    return _CLIENTS[key]


def create_resources(stack: str, region: str = "us-east-1", endpoint_url: str | None = None) -> dict[str, str]:
    """Create every table, the bucket and the queues of the template (existing ones are kept).

    Returns ``names(stack)`` plus ``CAIRN_QUEUE_URL``.
    """
    kw = {"region_name": region}
    if endpoint_url:
        kw["endpoint_url"] = endpoint_url
    ddb = _client("dynamodb", **kw)
    existing = set(ddb.list_tables().get("TableNames", []))
    for props in resources_of("AWS::DynamoDB::Table").values():
        name = resolve(props["TableName"], stack, region=region)
        if name in existing:
            continue
        args: dict[str, Any] = {k: props[k] for k in ("AttributeDefinitions", "KeySchema", "BillingMode") if k in props}
        args["TableName"] = name
        for key in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
            if key in props:
                args[key] = props[key]
        ddb.create_table(**args)
        if "TimeToLiveSpecification" in props:
            ddb.update_time_to_live(TableName=name, TimeToLiveSpecification=props["TimeToLiveSpecification"])
    out = names(stack, region)
    s3 = _client("s3", **kw)
    with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
        s3.create_bucket(Bucket=out["CAIRN_BUCKET"])
    rules = resources_of("AWS::S3::Bucket")["DataBucket"].get("LifecycleConfiguration", {}).get("Rules", [])
    if rules:
        s3.put_bucket_lifecycle_configuration(Bucket=out["CAIRN_BUCKET"],
                                              LifecycleConfiguration={"Rules": [lifecycle_rule(r) for r in rules]})
    sqs = _client("sqs", **kw)
    queues = resources_of("AWS::SQS::Queue")
    dlq = sqs.create_queue(QueueName=resolve(queues["ExtractionDeadLetterQueue"]["QueueName"], stack, region=region),
                           Attributes={"FifoQueue": "true"})
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq["QueueUrl"], AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    q = queues["ExtractionQueue"]
    queue = sqs.create_queue(QueueName=resolve(q["QueueName"], stack, region=region), Attributes={
        "FifoQueue": "true", "VisibilityTimeout": str(q.get("VisibilityTimeout", 360)),
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn,
                                     "maxReceiveCount": q["RedrivePolicy"]["maxReceiveCount"]})})
    out["CAIRN_QUEUE_URL"] = queue["QueueUrl"]
    return out
