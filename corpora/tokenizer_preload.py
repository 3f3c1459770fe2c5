"""Imported by the forkserver of ``corpora.isolated`` (its ``_PRELOAD``) and nowhere else: loads the embedder's
tokenizer (``corpora.passage_tokens``) once, so that each child reading a file inherits it rather than loading it
again under its memory limit."""

from corpora.passage_tokens import passage_tokenizer

passage_tokenizer()
