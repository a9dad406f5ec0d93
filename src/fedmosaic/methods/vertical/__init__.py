"""Vertical federated learning: parties hold different columns of the same rows.

Split networks (Local, Vanilla VFL, PlugVFL, LASER-VFL), FedHSSL and False VFL.
"""
