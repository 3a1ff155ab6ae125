"""One layer of user operations: what the CLI and the web console do, as plain functions.

Each module holds the operations of one area (setup, records, fields, objects, spec, audit, catalog);
each operation takes plain arguments, opens and closes what it needs through `.session`, and returns
a result the caller presents. The CLI and the web layer only parse input, call these and print or
render. This package imports nothing heavy itself: import the submodule you need.
"""
