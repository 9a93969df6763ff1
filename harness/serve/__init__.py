"""`membrane serve`: the HTTP API and the dashboard (application layer)."""
