"""Evaluation: the method generators scored on QA datasets in the schema of ``data/eval``."""
