"""Cairn's command-line tool: ``python -m chalicelib.cli [--stage S] <command>``.

Commands (each goes through the same service functions as the API; no Chalice):

- ``export --org O --bank B [--history] [-o FILE]``: ``memories.jsonl`` to FILE or stdout.
- ``import --org O --bank B FILE``: replay an ndjson file (``-`` = stdin) through
  ``chalicelib.banks.transfer.import_lines`` with a progress bar; prints
  ``{imported, skipped, errors}``; exit status 1 when some lines were reported as errors.
- ``mint-token --org O --kind K [--user-id U] --permissions a,b|all [--label L]
  [--expires-at MS] [--banks b1,b2]``: prints the new token once. Works for any org: this is how
  an operator creates an org.
- ``rebuild-indexes [--org O] [--bank B]``: rebuild recall indexes from the records and write
  snapshots (``chalicelib.search.recall.rebuild``); without ``--org`` every org (a table scan:
  operator tool only).
- ``backfill-vectors [--org O] [--bank B] [--limit N]``: one bounded run of the vector backfill
  (``chalicelib.banks.backfill``) in each selected bank (without ``--org`` every org: a table
  scan), at most N memories examined per bank (default ``CAIRN_BACKFILL_BATCH``); prints one
  JSON line per bank (``status`` ran, covered or unavailable, ``examined``, ``embedded``,
  ``left``, ``done``, ``with_vector``, ``live``); exit status 1 when the model is not available.
- ``limits show|set --org O [--memories-per-bank N] [--banks-per-org N] [--requests-per-minute N]
  [--burst N] [--as-of-cost N] [--extraction-tokens-per-day N] [--org-requests-per-minute N]
  [--org-burst N]``: an org's limits; ``set`` stores the operator's values (N up to 10^15, or
  ``default`` to drop one), the only way to raise a limit above the defaults.
- ``usage --org O | --all-orgs [--from T] [--to T] [--granularity hour|day] [--group-by
  bank|token|operation] [--format table|csv|json]``: the usage report of ``GET /v1/usage``
  (``chalicelib.usage.report``; T is ms since the epoch or an ISO UTC date/time; default the last
  24 hours); ``--all-orgs`` scans every org (group keys ``<org>/<key>``).
- ``doctor [--org O] [--json]``: the deployment's self-test (``chalicelib.doctor``) as the
  operator sees it: details name the tables, bucket, queue (and its depth) and model endpoint;
  ``--org`` runs the round trip with that org's probe and adds its extraction quota. Exit status
  1 when a required check failed.

The metric lines a command's work emits (CloudWatch reads them on Lambda) are dropped unless
``--metrics`` is given, which prints them to stderr.

Stages: ``local`` (the default) talks to the moto server of the local stack running from
``$CAIRN_STATE_DIR`` (default ``.cairn-local``; its ports are in ``stack.json`` there), or to
``$CAIRN_MOTO_PORT`` when set, with fake credentials and the ``cairn-local`` names; with neither
it refuses (exit 2) rather than guess a port another process may own. ``dev`` and ``prod`` use
the ambient AWS credentials (profile, SSO, environment) and need ``CAIRN_TABLE_PREFIX`` and
``CAIRN_BUCKET`` (and ``CAIRN_REGION`` unless us-east-1) set to the deployed stack's names.

Exit status: 0 ok, 1 a Cairn error or reported import errors, 2 bad arguments or configuration.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import getpass
import io
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from .auth.principal import KINDS

LOCAL_STACK = "cairn-local"
STAGES = ("local", "dev", "prod")
# The CLI is not behind API Gateway: exports are always written inline, whatever their size.
UNLIMITED_INLINE = 2 ** 62


class UsageError(Exception):
    """Bad arguments or configuration (exit status 2)."""


def stage_environment(stage: str, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment variables to set for ``stage`` (``environ`` defaults to ``os.environ``).

    ``local``: moto's endpoint (``CAIRN_MOTO_PORT``, else the running stack's, else
    ``UsageError``), fake credentials and the local stack's ``CAIRN_*`` names.
    ``dev``/``prod``: only ``CAIRN_STAGE``; raises ``UsageError`` naming ``CAIRN_TABLE_PREFIX`` /
    ``CAIRN_BUCKET`` when they are not set (the defaults are the local stack's names).
    """
    # This runs before any Settings exist: it computes the process environment for the stage. It
    # reads the local launcher's variables and checks that the deployed names are present.
    environ = dict(os.environ if environ is None else environ)
    if stage == "local":
        from infra.local import runfile
        from infra.local.resources import names  # the launcher's own source of names

        port = environ.get("CAIRN_MOTO_PORT")
        if not port:
            running = runfile.read(runfile.state_dir(environ))
            if running is None:
                raise UsageError(f"no local stack is running from {runfile.state_dir(environ)} (start it with "
                                 "`make run`, set CAIRN_STATE_DIR to its state directory, or set CAIRN_MOTO_PORT)")
            port = str(running["moto_port"])
        env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "testing",
               "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1", "CAIRN_STAGE": "local"}
        env.update(names(LOCAL_STACK))
        return env
    if stage not in STAGES:
        raise UsageError(f"unknown stage {stage!r}; use one of {', '.join(STAGES)}")
    missing = [v for v in ("CAIRN_TABLE_PREFIX", "CAIRN_BUCKET") if not environ.get(v)]
    if missing:
        raise UsageError(f"--stage {stage} needs {' and '.join(missing)} set to the deployed stack's names "
                         f"(e.g. CAIRN_TABLE_PREFIX=<stack>- CAIRN_BUCKET=<stack>-<account>-data)")
    return {"CAIRN_STAGE": stage}


def _actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:  # noqa: BLE001 - no login name in some containers
        return "cli"


def _progress(total: int | None, desc: str, out: TextIO):
    from tqdm import tqdm  # type: ignore[import-untyped]  # no types-tqdm in the environment
    return tqdm(total=total, desc=desc, unit="rec", file=out, disable=None, leave=False)


# --- commands -------------------------------------------------------------------------------

def cmd_export(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Write the bank's ``memories.jsonl`` (``--history``: every revision) to ``-o`` or stdout."""
    from .banks.transfer import export_bank
    from .settings import override

    with override(export_inline_bytes=UNLIMITED_INLINE):
        result = export_bank(args.org, args.bank, history=args.history)
    data = result.data or b""
    if args.output and args.output != "-":
        tmp = Path(args.output + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, args.output)
        print(f"exported {len(data.splitlines())} records to {args.output}", file=err)
    else:
        out.write(data.decode("utf-8"))
        out.flush()
    if result.damaged:
        print(f"{result.damaged} damaged records were written as {{id, damaged, reason}} lines", file=err)
    return 0


def _read_lines(path: str) -> list[bytes]:
    if path == "-":
        return sys.stdin.buffer.read().splitlines()
    try:
        return Path(path).read_bytes().splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def cmd_import(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Import an ndjson file; prints ``{imported, skipped, errors}``."""
    from .banks.transfer import import_lines

    lines = _read_lines(args.file)
    total = sum(1 for line in lines if line.strip())
    bar = _progress(total, f"import {args.bank}", err)
    try:
        result = import_lines(args.org, args.bank, lines, actor=_actor(), progress=bar.update)
        bar.update(max(0, total - bar.n))  # invalid and superseded lines are done too
    finally:
        bar.close()
    out.write(json.dumps(dataclasses.asdict(result), ensure_ascii=False, indent=2) + "\n")
    return 1 if result.errors else 0


def cmd_mint_token(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Mint a token for any org; prints ``{token, token_id, ...}`` (the secret, shown once)."""
    from pydantic import ValidationError

    from .api.tokens import render
    from .auth.principal import Permission
    from .auth.tokens import MintRequest, mint

    perms = [p.value for p in Permission] if args.permissions.strip() == "all" else \
        [p.strip() for p in args.permissions.split(",") if p.strip()]
    try:
        req = MintRequest(kind=args.kind, user_id=args.user_id, permissions=perms, label=args.label,
                          expires_at=args.expires_at,
                          banks=[b.strip() for b in args.banks.split(",") if b.strip()] if args.banks else None)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise UsageError(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}") from None
    out.write(json.dumps(render(mint(args.org, req, created_by=_actor())), indent=2) + "\n")
    return 0


def _bank_rows(org: str | None, bank: str | None) -> Iterator[Any]:
    from .core.store import TRASH_PREFIX, get_bank_row, list_bank_rows

    if org and bank:
        row = get_bank_row(org, bank)
        if row is None:
            from .errors import NotFound
            raise NotFound(f"Bank '{bank}' not found in org '{org}'.", code="bank_not_found")
        yield row
        return
    for row in list_bank_rows(org):
        # trash entries and the config version rows (name "!config") hold no memories
        if not row.name.startswith(TRASH_PREFIX) and row.name != "!config":
            yield row


def cmd_rebuild_indexes(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Rebuild every selected bank's index and write its snapshot; prints one JSON line each."""
    if args.bank and not args.org:
        raise UsageError("--bank needs --org")
    try:
        from .search.recall import rebuild
    except ImportError:
        print("rebuild-indexes: the recall index (chalicelib/search) is not installed; nothing to do.",
              file=err)
        return 0
    rows = list(_bank_rows(args.org, args.bank))
    bar = _progress(len(rows), "rebuild", err)
    try:
        for row in rows:
            result = rebuild(row.org_id, row.name)
            out.write(json.dumps({"org": row.org_id, **dataclasses.asdict(result)}) + "\n")
            bar.update(1)
    finally:
        bar.close()
    return 0


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return n


def cmd_backfill_vectors(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """One backfill run in each selected bank; prints one JSON line each; 1 without the model."""
    from .banks.backfill import backfill_all
    if args.bank and not args.org:
        raise UsageError("--bank needs --org")
    runs = backfill_all(args.org, args.bank, limit=args.limit, on_behalf_of=_actor())
    for run in runs:
        out.write(json.dumps(dataclasses.asdict(run)) + "\n")
    if any(r.status == "unavailable" for r in runs):
        print("backfill-vectors: the sentence model is not available (CAIRN_MODEL_DIR, make model)", file=err)
        return 1
    return 0


def cmd_doctor(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the doctor as the operator; one line per check (or ``--json``), exit 1 unless ok."""
    from . import doctor
    report = doctor.run_checks(f"operator:{getpass.getuser()}", args.org, operator=True)
    if args.json:
        out.write(json.dumps(report) + "\n")
    else:
        width = max(len(c["name"]) for c in report["checks"])
        for c in report["checks"]:
            state = "ok  " if c["ok"] else ("FAIL" if c["required"] else "warn")
            out.write(f"{state}  {c['name'].ljust(width)}  {c['detail']}  ({c['ms']} ms)\n")
        out.write("doctor: ok\n" if report["ok"] else "doctor: a required check failed\n")
    return 0 if report["ok"] else 1


def _org_exists(org: str) -> bool:
    """Whether ``org`` has a token (``mint-token`` creates an org) or limits an operator set."""
    from .auth import store
    from .usage import limits
    ov = limits.overrides(org, fresh=True)
    return next(store.list_org(org), None) is not None or bool(ov.operator or ov.org)


def cmd_limits(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``limits show``: the org's limits as JSON (``effective``, ``operator``, ``org``, ``defaults``).
    ``limits set``: the operator's values of the org (the only way to raise one; ``default`` drops
    the operator's value), audited as ``usage.limits``, then the same JSON."""
    from . import audit
    from .usage import limits
    if args.action == "set":
        values: dict[str, int | None] = {}
        for name in limits.FIELDS:
            raw = getattr(args, name)
            if raw is None:
                continue
            if raw == "default":
                values[name] = None
                continue
            try:
                values[name] = int(raw)
            except ValueError:
                raise UsageError(f"--{name.replace('_', '-')} takes an integer or 'default', not {raw!r}") from None
        if not values:
            raise UsageError("limits set needs at least one --<limit> value")
        try:
            limits.set_operator(args.org, values)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        audit.record(args.org, "usage.limits", f"operator:{getpass.getuser()}", args.org, {"operator": values})
    elif not _org_exists(args.org):
        from .errors import NotFound
        raise NotFound(f"Org '{args.org}' does not exist: no token was ever minted for it and no limit set "
                       "(mint-token creates an org).", code="not_found")
    ov = limits.overrides(args.org, fresh=True)
    out.write(json.dumps({"org": args.org, "effective": dataclasses.asdict(limits.combine(limits.defaults(), ov)),
                          "operator": ov.operator, "org_values": ov.org,
                          "defaults": dataclasses.asdict(limits.defaults())}) + "\n")
    return 0


def _instant(text: str) -> int:
    """ms since the epoch from ``text``: digits (ms) or an ISO date/time (UTC unless it says)."""
    from datetime import UTC, datetime
    if text.isdigit():
        return int(text)
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"not a time: {text!r} (ms since the epoch or an ISO date/time)") from None
    return int((t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp() * 1000)


def cmd_usage(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the usage report of one org (or every org) as a table, CSV or JSON."""
    from datetime import UTC, datetime

    from . import clock
    from .usage import report
    if bool(args.org) == bool(args.all_orgs):
        raise UsageError("give --org O or --all-orgs")
    to = _instant(args.to) if args.to else clock.now_ms()
    start = _instant(args.from_) if args.from_ else to - report.DAY_MS
    try:
        rep = report.report(args.org, start, to, granularity=args.granularity, group_by=args.group_by)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.format == "json":
        out.write(json.dumps(rep.as_json(), indent=2) + "\n")
    elif args.format == "csv":
        out.write(rep.as_csv())
    else:
        head = ["start (UTC)", "group", *report.FIELDS]
        rows = [[datetime.fromtimestamp(int(str(r[0])) / 1000, UTC).strftime("%Y-%m-%d %H:%M"), *map(str, r[1:])]
                for r in rep.rows()]
        widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=False)]
        for row in [head, *rows]:
            out.write("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)).rstrip() + "\n")
    return 0


# --- entry point ----------------------------------------------------------------------------

def _add_backfill(sub: Any) -> None:
    bf = sub.add_parser("backfill-vectors", help="give memories lacking the current model's vector one")
    bf.add_argument("--org")
    bf.add_argument("--bank")
    bf.add_argument("--limit", type=_positive, help="memories examined per bank (default CAIRN_BACKFILL_BATCH)")
    bf.set_defaults(func=cmd_backfill_vectors)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: one subcommand per command of the module's docstring."""
    p = argparse.ArgumentParser(prog="python -m chalicelib.cli", description="Cairn operator tool.")
    p.add_argument("--stage", choices=STAGES, default="local",
                   help="local: the local stack's moto (default); "
                        "dev/prod: AWS with CAIRN_* names from the environment")
    p.add_argument("--metrics", action="store_true", help="print the work's metric lines (EMF JSON) to stderr")
    sub = p.add_subparsers(dest="command", required=True)

    e = sub.add_parser("export", help="export a bank as memories.jsonl")
    e.add_argument("--org", required=True)
    e.add_argument("--bank", required=True)
    e.add_argument("--history", action="store_true", help="every revision, not just current records")
    e.add_argument("-o", "--output", help="file to write (default stdout)")
    e.set_defaults(func=cmd_export)

    i = sub.add_parser("import", help="import a memories.jsonl file")
    i.add_argument("--org", required=True)
    i.add_argument("--bank", required=True)
    i.add_argument("file", help="ndjson file, or - for stdin")
    i.set_defaults(func=cmd_import)

    m = sub.add_parser("mint-token", help="mint a token for any org (creates the org)")
    m.add_argument("--org", required=True)
    m.add_argument("--kind", required=True, choices=KINDS)
    m.add_argument("--user-id")
    m.add_argument("--permissions", required=True, help="comma-separated, or 'all'")
    m.add_argument("--label")
    m.add_argument("--expires-at", type=int, help="ms since epoch")
    m.add_argument("--banks", help="comma-separated bank allow-list")
    m.set_defaults(func=cmd_mint_token)

    r = sub.add_parser("rebuild-indexes", help="rebuild recall indexes and write snapshots")
    r.add_argument("--org")
    r.add_argument("--bank")
    r.set_defaults(func=cmd_rebuild_indexes)

    _add_backfill(sub)
    lim = sub.add_parser("limits", help="show or set an org's limits (set: the operator's values; raises too)")
    lim.add_argument("action", choices=("show", "set"))
    lim.add_argument("--org", required=True)
    from .usage.limits import FIELDS
    for name in FIELDS:
        lim.add_argument(f"--{name.replace('_', '-')}", dest=name, metavar="N|default",
                         help="0 = no limit (burst, as-of-cost: at least 1); default drops the operator's value")
    lim.set_defaults(func=cmd_limits)
    d = sub.add_parser("doctor", help="the deployment's self-test, with what only an operator may see")
    d.add_argument("--org", help="run the round trip with this org's probe and show its extraction quota")
    d.add_argument("--json", action="store_true", help="the report as JSON")
    d.set_defaults(func=cmd_doctor)
    u = sub.add_parser("usage", help="usage report of an org (or every org), as GET /v1/usage")
    u.add_argument("--org")
    u.add_argument("--all-orgs", action="store_true", help="every org (a table scan)")
    u.add_argument("--from", dest="from_", help="ms since the epoch or ISO date/time (default: to - 24 h)")
    u.add_argument("--to", help="ms since the epoch or ISO date/time (default: now)")
    u.add_argument("--granularity", choices=("hour", "day"), default="hour")
    u.add_argument("--group-by", choices=("bank", "token", "operation"), default="bank")
    u.add_argument("--format", choices=("table", "csv", "json"), default="table")
    u.set_defaults(func=cmd_usage)
    return p


def main(argv: list[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None,
         configure: Callable[[str], dict[str, str]] = stage_environment) -> int:
    """Run one command; returns the exit status (0 ok, 1 error, 2 usage/configuration)."""
    from .errors import CairnError, ConfigError

    out, err = out or sys.stdout, err or sys.stderr
    args = build_parser().parse_args(argv)
    saved = dict(os.environ)  # in-process callers (tests) get their environment back
    try:
        os.environ.update(configure(args.stage))
        # metric lines (stdout on Lambda, for CloudWatch) are no output of a command: dropped,
        # or on stderr with --metrics
        with contextlib.redirect_stdout(err if args.metrics else io.StringIO()):
            return args.func(args, out, err)
    except UsageError as exc:
        print(f"error: {exc}", file=err)
        return 2
    except ConfigError as exc:
        print(f"error: {exc}", file=err)
        return 2
    except CairnError as exc:
        detail = f" {json.dumps(exc.details)}" if exc.details else ""
        print(f"error: {exc.message} ({exc.code}){detail}", file=err)
        return 1
    finally:
        os.environ.clear()
        os.environ.update(saved)


if __name__ == "__main__":
    sys.exit(main())
