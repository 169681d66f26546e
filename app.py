"""Cairn's Chalice app: registers routes, blueprints and event handlers, nothing else.

Every route is registered here, but the module that declares it (its area: views, models, the
domain code behind them) is imported on the route's first request (``chalicelib.api.areas``), so a
Lambda container starts without importing the surfaces it does not serve."""

from chalice import Chalice

from chalicelib.api import areas, console
from chalicelib.api import events as event_handlers
from chalicelib.api.http import finalize
from chalicelib.logs import configure_logging

app = Chalice(app_name="cairn")
configure_logging()

areas.register(app)
app.register_blueprint(event_handlers.bp)
app.register_blueprint(console.bp)

finalize(app, areas.envelopes())
