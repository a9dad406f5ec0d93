"""The split-network baselines Local, Vanilla VFL, PlugVFL and LASER-VFL: one active party (server.py), one passive party (client.py)."""
