"""Flower deployments: certificates and node keys, a local SuperLink with SuperNodes, submitting an experiment."""
