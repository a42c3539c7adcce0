"""How findable an exposition's tools are: for each tool, queries made from its own texts and from its shape
(`probes.py`), searched as `search_tools` searches (`report.py`), scored (`scores.py`), with the tool pairs search
confuses and what each listing mode costs a model's context in bytes and tokens (`costs.py`, `tokens.py`). An API
owner sees which descriptions to improve (`apimcp discovery report`, `GET /api/v1/expositions/{id}/discovery`).
"""
