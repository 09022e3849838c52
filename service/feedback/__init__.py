"""The operator's loop: query log, feedback, review queue, golden export, insights."""
