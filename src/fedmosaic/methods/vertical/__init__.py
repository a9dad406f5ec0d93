"""Vertical federated learning: parties hold different columns of the same rows.

Each method is a package: ``false_vfl/`` (FALSE-VFL), ``split/`` (the
split-network baselines Local, Vanilla VFL, PlugVFL and LASER-VFL) and
``fedhssl/`` (FedHSSL). What they share sits here: the task they are built
from, the parties' networks, the passive party's state, reply specs,
selection on the validation split and tensor conversions.
"""
