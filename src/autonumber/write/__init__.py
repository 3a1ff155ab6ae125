"""The write path: take numbers and write rows (per call, group commit, a caller's transaction,
streamed batches), with the checks a row passes first (docs/design.md, "The write path")."""
