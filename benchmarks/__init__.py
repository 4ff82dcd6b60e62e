"""The controller's benchmarks, each a module run from the repository's root
(``.venv/bin/python -m benchmarks.scale``); what they share is in ``harness``."""
