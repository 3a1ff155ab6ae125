"""Bootstrap and cut-over: standard pack, rules, counter seed, verify, report."""
