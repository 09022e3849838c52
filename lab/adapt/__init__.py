"""`python -m lab adapt-model`: fine-tune the embedding model on pairs mined from the corpus (issue 19)."""
