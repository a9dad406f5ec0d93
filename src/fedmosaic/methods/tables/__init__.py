"""Protocols that prepare sites' own tables before training: federated scaling, private row alignment."""
