"""Federated learning methods: parameters, server and client logic of each, and the registry that builds them."""
