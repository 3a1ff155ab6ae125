"""The rule life cycle of an autonumber field: model, store, scan, seed, verify, add and change.

Every path that changes a rule (CLI, data-spec, `setup apply`, console, HTTP) calls this package;
`autonumber.setup` holds only the cut-over pipeline built on it.
"""
