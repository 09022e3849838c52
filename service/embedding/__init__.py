"""The embedding model behind phases 3 and 4: one `Embedder` protocol with a
PyTorch and an ONNX Runtime backend (backends.py), the query micro-batcher
(batcher.py) and the client of an OpenAI-compatible embedding server for
document embedding (remote.py)."""
