"""FedMix and NaiveMix (Yoon et al., ICLR 2021): FedAvg with shared mean data.

Every client shares the means of its inputs and of its one-hot labels, once:
by default one mean over its whole dataset, or one per group of
``mean_batch`` samples. The server relays each mean to every other client
once; a client keeps the global means it received in its state and trains on
mixes of its own samples with means drawn at random, one per sample:

- **NaiveMix** trains on ``x~ = (1 - lam) x_i + lam x_bar_j`` with the mixed
  label, i.e. ``(1 - lam) CE(f(x~), y_i) + lam CE(f(x~), y_bar_j)``;
- **FedMix** approximates global mixup to first order in ``lam`` (the
  gradient of global mixup's loss cannot be computed from means alone, but
  its Taylor expansion around ``(1 - lam) x_i`` can)::

      (1 - lam) CE(f((1 - lam) x_i), y_i) + lam CE(f((1 - lam) x_i), y_bar_j)
          + lam (1 - lam) < d CE(f(x), y_i) / dx at x = (1 - lam) x_i , x_bar_j >

  whose last term needs a double backward.

Protocol, piggybacked on FedAvg's rounds (no extra trip): a train message
asks a client for its means (config ``send_means``) until the server holds
them, and carries the means the client has not received yet (arrays
``global_x``, ``global_y``, config ``means_from``: the contributing client of
each row), never the client's own. The client replies with its trained model
and, when asked, its means (arrays ``mean_x`` of shape ``(m, *input_shape)``
and ``mean_y`` of shape ``(m, num_classes)``). Rounds before any means exist
are plain FedAvg. Receiving is idempotent: a client ignores rows from a
contributor it already holds, so a lost reply (the server then sends the same
rows again) does not duplicate means.
"""
