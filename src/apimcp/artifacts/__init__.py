"""Artifacts a user attaches to a service: prompts, resources, custom tools and output filters.

Each kind has one module; documents are read and checked (`documents`) when they are attached
or loaded from a configuration file, and compiled into what an exposition serves when a snapshot
is applied. Nothing here imports the gateway or the control plane: the gateway hands in what
reaches backends and other tools through small interfaces.
"""
