"""A conversation's turns: replies to clarifications, carried topics, the screen as a prior."""
