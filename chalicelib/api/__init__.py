"""HTTP surface: Chalice blueprints. The only package that imports Chalice; each route parses
its input with pydantic, calls one service function and renders the result."""
