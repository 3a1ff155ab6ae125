"""The benchmark harness of the repository (not part of the installed package): `python -m bench`.

It measures the engine's strategies against native sequences and django-sequences, `records.insert`
and the HTTP server against the inserts a user could write, and the CLI's start-up; the `bench`
extra brings matplotlib (plots), Django and django-sequences (the row-lock peer). The bench_*.py
modules are single benchmarks, each runnable on its own.
"""
