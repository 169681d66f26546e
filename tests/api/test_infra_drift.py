"""No drift between the pynamodb models and the CloudFormation template.

Each model in ``chalicelib.storage.tables.ALL_MODELS`` and the template table named
``${AWS::StackName}-<LOGICAL_NAME>`` must declare the same hash/range keys, the same attribute
types for every key attribute (table and indexes), and the same GSIs/LSIs with their keys and
projections; every template table must have a model.
"""

from __future__ import annotations

from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.indexes import KeysOnlyProjection, LocalSecondaryIndex

from chalicelib.storage.tables import ALL_MODELS
from infra.local.resources import resolve, resources_of

STACK = "drift"


def _projection(p: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    return p["ProjectionType"], tuple(sorted(p.get("NonKeyAttributes") or ()))


def _keys(schema: list[dict[str, str]]) -> dict[str, str]:
    return {k["KeyType"]: k["AttributeName"] for k in schema}


def describe_template(props: dict[str, Any]) -> dict[str, Any]:
    """A template table's keys, key attribute types and indexes, in one comparable shape."""
    def indexes(key: str) -> dict[str, Any]:
        return {ix["IndexName"]: {"keys": _keys(ix["KeySchema"]), "projection": _projection(ix["Projection"])}
                for ix in props.get(key, [])}
    return {"keys": _keys(props["KeySchema"]),
            "types": {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]},
            "gsi": indexes("GlobalSecondaryIndexes"), "lsi": indexes("LocalSecondaryIndexes")}


def describe_model(model) -> dict[str, Any]:
    """The same shape from a pynamodb model's schema."""
    schema = model._get_schema()
    types = {a["AttributeName"]: a["AttributeType"] for a in schema["attribute_definitions"]}

    def indexes(key: str) -> dict[str, Any]:
        out = {}
        for ix in schema.get(key, []):
            out[ix["index_name"]] = {"keys": _keys(ix["key_schema"]), "projection": _projection(ix["projection"])}
            types.update({a["AttributeName"]: a["AttributeType"] for a in ix.get("attribute_definitions", [])})
        return out
    gsi, lsi = indexes("global_secondary_indexes"), indexes("local_secondary_indexes")
    return {"keys": _keys(schema["key_schema"]), "types": types, "gsi": gsi, "lsi": lsi}


def template_tables() -> dict[str, dict[str, Any]]:
    """``{logical name: properties}``: the logical name is the TableName after ``<stack>-``."""
    out = {}
    for props in resources_of("AWS::DynamoDB::Table").values():
        physical = resolve(props["TableName"], STACK)
        assert physical.startswith(f"{STACK}-"), f"table name {props['TableName']} is not '${{AWS::StackName}}-<name>'"
        out[physical[len(STACK) + 1:]] = props
    return out


@pytest.mark.parametrize("model", ALL_MODELS, ids=lambda m: m.__name__)
def test_model_matches_template(model):
    tables = template_tables()
    assert model.LOGICAL_NAME in tables, f"{model.__name__}: no template table '{model.LOGICAL_NAME}'"
    assert describe_model(model) == describe_template(tables[model.LOGICAL_NAME])


def test_every_template_table_has_a_model():
    assert sorted(template_tables()) == sorted(m.LOGICAL_NAME for m in ALL_MODELS)


def test_pay_per_request_everywhere():
    for name, props in template_tables().items():
        assert props.get("BillingMode") == "PAY_PER_REQUEST", name


def test_drift_is_detected():
    """The comparison sees a changed key type, a missing index and a changed projection."""
    from chalicelib.storage.tables import MemoryModel, _Base

    class OtherOrder(LocalSecondaryIndex):
        class Meta:
            index_name = "order-index"
            projection = KeysOnlyProjection()
        bank_key = UnicodeAttribute(hash_key=True)
        ord = UnicodeAttribute(range_key=True)

    class Drifted(_Base):
        class Meta(_Base.Meta):
            pass
        LOGICAL_NAME = "memories"
        bank_key = UnicodeAttribute(hash_key=True)
        sk = NumberAttribute(range_key=True)

    class DriftedProjection(_Base):
        class Meta(_Base.Meta):
            pass
        LOGICAL_NAME = "memories"
        bank_key = UnicodeAttribute(hash_key=True)
        sk = UnicodeAttribute(range_key=True)
        ord = UnicodeAttribute(null=True)
        by_order = OtherOrder()

    want = describe_template(template_tables()["memories"])
    assert describe_model(MemoryModel) == want
    assert describe_model(Drifted) != want
    assert describe_model(DriftedProjection) != want
