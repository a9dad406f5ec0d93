"""FedHSSL: SimSiam pre-training across and within parties, then Vanilla VFL fine-tuning (server.py: the active party; client.py: a passive party)."""
