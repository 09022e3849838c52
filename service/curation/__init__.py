"""Curations: operator pins and hides per normalised query, applied to every replica's answers."""
