"""Protocols run on sites' own tables before training, over the federation's engine.

``alignment.py`` matches a vertical task's rows across parties by ECDH private
set intersection; ``scaling.py`` pools the sites' column moments into one
mean and standard deviation. Neither is a method: they prepare the data the
methods train on.
"""
