"""How to run a model: LLM backends, embeddings and rerankers."""
