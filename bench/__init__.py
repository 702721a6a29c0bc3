"""Benchmarks, not tests: `.venv/bin/python -m bench.NAME`; ratios against a baseline
measured in the same run."""
