"""The one core every surface writes through: the banks area's storage, split by job.

A *bank* is the unit of isolation and indexing: a named bank, a structured-memory scope's
namespace or a team space's retrieval projection, each a ``BankModel`` row whose ``incarnation``
keys its records. Its changes are split into write lanes by memory id. The modules:

- ``lanes``: write lanes and clocks, a bank's ``BankHead`` read consistently, the version item a
  writer moves before acknowledging, the read recall makes of many banks at once
  (``get_bank_rows``), the config version rows and the queries of the banks table;
- ``txn``: the one write path, ``write(org_id, attempt)``: the attempt's ``BankTx`` stages record
  changes (``Write``) with the advance of each lane they fall in, conditioned on the positions
  read, so within a lane position order is commit order; ``on_commit`` observers (the recall
  index's cache) hear of each commit;
- ``queries``: current records, pointers, counters, pages, histories and revisions;
- ``parallel``: a whole bank's records read in key ranges at once (a cold rebuild);
- ``keys``: key formats and stored names (pointers ``~fp/`` and ``~name/``, tag counters, trash
  entries ``.trash/``, the S3 prefixes of rules, exports and uploads) and page cursors.

Domain code imports this package and calls its named functions; it never builds a key or a model
itself.
"""

from .keys import BACKFILL_KEY as BACKFILL_KEY
from .keys import EMBED_OP as EMBED_OP
from .keys import INTERNAL_OPS as INTERNAL_OPS
from .keys import NAME_POINTER_PREFIX as NAME_POINTER_PREFIX
from .keys import NAMESPACE_PREFIX as NAMESPACE_PREFIX
from .keys import POINTER_PREFIX as POINTER_PREFIX
from .keys import TAG_PREFIX as TAG_PREFIX
from .keys import TRASH_PREFIX as TRASH_PREFIX
from .keys import decode_cursor as decode_cursor
from .keys import encode_cursor as encode_cursor
from .keys import export_key as export_key
from .keys import exports_prefix as exports_prefix
from .keys import pointer_key as pointer_key
from .keys import rules_prefix as rules_prefix
from .keys import tag_key as tag_key
from .keys import trash_rules_prefix as trash_rules_prefix
from .keys import upload_key as upload_key
from .keys import upload_object as upload_object
from .keys import upload_prefix as upload_prefix
from .lanes import BATCH_KEYS as BATCH_KEYS
from .lanes import CONFIG_NAME as CONFIG_NAME
from .lanes import CONFIG_ORG as CONFIG_ORG
from .lanes import LANE_PREFIX as LANE_PREFIX
from .lanes import LANE_SPAN as LANE_SPAN
from .lanes import MAX_LANES as MAX_LANES
from .lanes import BankHead as BankHead
from .lanes import BankRow as BankRow
from .lanes import BankRows as BankRows
from .lanes import Clock as Clock
from .lanes import KnownBank as KnownBank
from .lanes import MemoryRow as MemoryRow
from .lanes import bank_names as bank_names
from .lanes import bank_problem as bank_problem
from .lanes import bump_versions as bump_versions
from .lanes import claim_snapshot as claim_snapshot
from .lanes import get_bank_head as get_bank_head
from .lanes import get_bank_row as get_bank_row
from .lanes import get_bank_rows as get_bank_rows
from .lanes import get_config_row as get_config_row
from .lanes import get_trash_row as get_trash_row
from .lanes import heads_of as heads_of
from .lanes import iter_live_bank_rows as iter_live_bank_rows
from .lanes import lane_count as lane_count
from .lanes import lane_key as lane_key
from .lanes import lane_of as lane_of
from .lanes import list_bank_rows as list_bank_rows
from .lanes import list_trash_rows as list_trash_rows
from .lanes import new_bank as new_bank
from .lanes import record_snapshot as record_snapshot
from .lanes import split_seq as split_seq
from .lanes import update_config_row as update_config_row
from .lanes import version_key as version_key
from .parallel import RECORD_RANGE_PARTS as RECORD_RANGE_PARTS
from .parallel import RECORD_READ_THREADS as RECORD_READ_THREADS
from .parallel import KeyRange as KeyRange
from .parallel import iter_records_any_order as iter_records_any_order
from .parallel import record_key_ranges as record_key_ranges
from .queries import REPAIR_HINT as REPAIR_HINT
from .queries import BackfillCursor as BackfillCursor
from .queries import History as History
from .queries import Revision as Revision
from .queries import count_memories as count_memories
from .queries import current as current
from .queries import decoded as decoded
from .queries import delete_memory_revisions as delete_memory_revisions
from .queries import fingerprint_pointer as fingerprint_pointer
from .queries import get_backfill_cursor as get_backfill_cursor
from .queries import get_item as get_item
from .queries import get_items as get_items
from .queries import get_pointer as get_pointer
from .queries import get_revision_record as get_revision_record
from .queries import guard_of as guard_of
from .queries import history_in_time_order as history_in_time_order
from .queries import iter_lane_revisions as iter_lane_revisions
from .queries import iter_live as iter_live
from .queries import iter_memory_history as iter_memory_history
from .queries import iter_memory_revisions as iter_memory_revisions
from .queries import iter_records as iter_records
from .queries import iter_revisions as iter_revisions
from .queries import live_tag_counts as live_tag_counts
from .queries import live_tag_totals as live_tag_totals
from .queries import memory_history as memory_history
from .queries import memory_items_after as memory_items_after
from .queries import name_pointer as name_pointer
from .queries import query_memories_page as query_memories_page
from .queries import record_of as record_of
from .queries import referrers as referrers
from .queries import relink as relink
from .queries import relink_revisions as relink_revisions
from .queries import revision_record as revision_record
from .queries import tag_total as tag_total
from .queries import vector_coverage as vector_coverage
from .txn import TX_BYTES as TX_BYTES
from .txn import TX_SHARED as TX_SHARED
from .txn import BankTx as BankTx
from .txn import Write as Write
from .txn import deltas as deltas
from .txn import embed_write as embed_write
from .txn import lane_batches as lane_batches
from .txn import on_commit as on_commit
from .txn import stage_backfill_cursor as stage_backfill_cursor
from .txn import stage_drop_name_pointer as stage_drop_name_pointer
from .txn import stage_name_pointer as stage_name_pointer
from .txn import tag_deltas as tag_deltas
from .txn import vector_delta as vector_delta
from .txn import write as write
