"""The bundled "Bookshelf" REST API that `apimcp demo` starts on loopback and exposes through the gateway.

`openapi.yaml` describes it; `backend.py` implements it in memory with aiohttp.
"""

from apimcp.demo_api.backend import create_app, spec_path, start

__all__ = ["create_app", "spec_path", "start"]
