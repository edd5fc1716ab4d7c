"""Slim immutable records and label selectors: the vocabulary every other layer speaks. Pure;
imports nothing else from slicectl.
"""
