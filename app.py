"""Cairn's Chalice app: registers blueprints and event handlers, nothing else."""

from chalice import Chalice

from chalicelib.api import audit, banks, console, hooks, inject, limits, mcp, meta, recall, structured, tokens, usage
from chalicelib.api import events as event_handlers
from chalicelib.api import team as team_api
from chalicelib.api.http import finalize
from chalicelib.logs import configure_logging

app = Chalice(app_name="cairn")
configure_logging()

app.register_blueprint(meta.bp)
app.register_blueprint(tokens.bp)
app.register_blueprint(banks.bp)
app.register_blueprint(recall.bp)
app.register_blueprint(inject.bp)
app.register_blueprint(structured.bp)
app.register_blueprint(hooks.bp)
app.register_blueprint(event_handlers.bp)
app.register_blueprint(team_api.bp)
app.register_blueprint(audit.bp)
app.register_blueprint(usage.bp)
app.register_blueprint(mcp.bp)
app.register_blueprint(limits.bp)
app.register_blueprint(console.bp)

finalize(app)
