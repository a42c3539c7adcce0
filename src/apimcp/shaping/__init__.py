"""Work on large JSON values done in worker processes, never on the gateway's event loop.

Building the object tree of a large document (parsing it, the collector's walks over it, freeing it) holds
the interpreter, whichever thread does it, so every other request waits. What needs the value of a large
answer or result (validating it, filtering it, TOON) runs here instead, in a bounded pool of processes
(`pool`), as jobs that take and give bytes (`frames`, `child`). Like `safety/`, this package imports
nothing else from apimcp: jobs are functions of other packages, named to the child by their module.
"""
