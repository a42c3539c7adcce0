"""The control plane's REST API (/api/v1), with its OpenAPI document."""
