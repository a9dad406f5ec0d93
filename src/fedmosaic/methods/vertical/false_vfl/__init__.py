"""FALSE-VFL: a latent variable model over any alignment of the parties (server.py: the active party; client.py: a passive party)."""
