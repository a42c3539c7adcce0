"""The web console: static pages the control plane serves at `/console/`, calling its REST API from the browser.

No build step and no front-end dependency: HTML, CSS and a few vanilla ES modules shipped as package data
(`static/`), served with a strict Content-Security-Policy. Everything the console shows or changes goes through
the same REST API the CLI uses, with the token the user logs in with, so every validation, permission and secret
rule of the API applies unchanged (docs/console.md).
"""
