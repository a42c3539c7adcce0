"""Code mode: an exposition lists search_tools, describe_tools and execute_code, and a model writes one program
that calls the tools it needs, in parallel where it can, and returns only what it wants to read.

`typescript.py` declares the tools' functions from their schemas; `limits.py` bounds a program; `program.py` is
the execute_code tool (its definition, reading its arguments); `setting.py` reads a plan's `code_mode`;
`mode.py` is an exposition's code mode: its listing and its programs' runs, each inner call handed to the
gateway, which governs it exactly as a client's call (`gateway/exposition.py`).
"""
