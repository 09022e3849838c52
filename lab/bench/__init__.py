"""`python -m service bench`: latency, throughput and scale."""
