"""Benchmarks: commands that measure the figures quoted in docs/ (run them, never quote without running)."""
