"""`python -m lab bench`: latency, throughput and scale."""
