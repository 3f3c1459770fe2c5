"""How an answer is reached: retrieval, the methods, step events and evaluation."""
