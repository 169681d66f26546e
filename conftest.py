"""The suite's order and its closing lines, for every layer and under pytest-xdist alike.

Order: the end-to-end files run first, then the API tests, then the unit tests (each layer in
collection order). ``make test`` hands whole files to its workers in this order
(``--dist loadfile --no-loadscope-reorder``): the long files (a stack, a browser, a fuzzer) start
early and the many short ones fill in at the end, rather than one long file keeping one worker
busy while the other has nothing left.

Closing lines: a test hands a line to the end of the run through its report's
``user_properties``: ``("summary", line)`` prints as is, ``("alarm", line)`` prints red between
two rows of ``!``. Reports travel from xdist's workers to the process that prints the summary;
module globals do not, so nothing else carries these lines. Each distinct line prints once, in
the order first seen.

Threads: ``infra.threads.pin()`` runs here, before any test module imports numpy, so the suite
computes on one BLAS thread as Lambda does.

Pure: imports neither boto3 nor moto (pytest loads this file for tests/unit too).
"""

from __future__ import annotations

from infra.threads import pin

pin()  # before numpy loads (module docstring)

KINDS = ("summary", "alarm")
LAYERS = ("tests/e2e/", "tests/api/", "tests/unit/")  # the order they run in


def layer_rank(nodeid: str) -> int:
    """Where a test's layer runs (``LAYERS``); anything else after them."""
    return next((i for i, prefix in enumerate(LAYERS) if nodeid.startswith(prefix)), len(LAYERS))


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: layer_rank(item.nodeid))  # stable: each layer keeps its order


def closing_lines(stats: dict[str, list]) -> list[tuple[str, str]]:
    """``[(kind, line)]`` from the reports in ``stats`` (the terminal reporter's, by outcome)."""
    seen: dict[tuple[str, str], None] = {}
    for reports in stats.values():
        for report in reports:
            for key, value in getattr(report, "user_properties", ()):
                if key in KINDS:
                    seen[(key, str(value))] = None
    return list(seen)


def pytest_terminal_summary(terminalreporter):
    for kind, line in closing_lines(terminalreporter.stats):
        if kind == "summary":
            terminalreporter.write_line(line)
            continue
        rule = "!" * 100
        for text in (rule, line, rule):
            terminalreporter.write_line(text, red=True, bold=True)
