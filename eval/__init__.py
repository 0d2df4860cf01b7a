"""The clag-bench harness: data loaders, the runner, metrics, tables and the CLI (``python -m eval``)."""
