"""The doctor's storage probe: one throwaway row written, read back and deleted."""

from __future__ import annotations

import time
import uuid

from ..clock import now_ms
from .tables import ExtractionModel, bind


def dynamodb_round_trip() -> str:
    """Put, consistently get and delete one probe row (key ``!doctor#<uuid>``, an hour's TTL in
    case the delete is lost) in the extraction table; returns that table's name. Raises what the
    backend raises."""
    bind()
    key = f"!doctor#{uuid.uuid4().hex}"
    row = ExtractionModel(session_key=key, sk="probe", org_id="!doctor", session_id="probe", updated_at=now_ms(),
                          expires_at=int(time.time()) + 3600)
    row.save()
    ExtractionModel.get(key, "probe", consistent_read=True)
    row.delete()
    return str(ExtractionModel.Meta.table_name)
