"""The service as a Model Context Protocol server (the official `mcp` SDK).

Tools `search_docs`, `get_context` and `get_page`, and every page as a
resource, over Streamable HTTP at `/mcp` (`http.py`) and over stdio
(`python -m service mcp`, `stdio.py`). Each tool call is answered by the REST
route it mirrors, called in process (`tools.py`): the same validation, the
same limits and the same error text, with no second copy of either.
"""
