"""SCAFFOLD (Karimireddy et al., ICML 2020): local steps corrected by control variates.

The server keeps the global model ``x`` and a server control variate ``c``;
each client ``i`` keeps its own control variate ``c_i`` (zero at first) in
its client state. In a round the server sends ``x`` and ``c``; a selected
client runs ``K`` local steps from ``x`` on the corrected gradient
``g_i(y) - c_i + c``, then sets (the paper's option II)

    ``c_i+ = c_i - c + (x - y) / (K lr)``

and replies with its model ``y`` and the change ``c_i+ - c_i``. With SGD
momentum ``m`` the ``K`` steps move the model further than ``K lr`` times
the mean gradient: a constant gradient ``g`` moves it by ``lr g S`` with
``S = sum_{t=1..K} (1 - m^t) / (1 - m)`` (:func:`effective_steps`), so ``K``
is replaced by ``S``, which keeps ``c_i+`` an estimate of the client's mean
gradient (with ``K`` alone and momentum 0.9 it is about ten times too large,
and the corrections make training diverge). Without momentum ``S = K``. The
server
moves the model by ``server_lr`` toward the example-weighted average of the
replies (``server_lr = 1``: the average itself, as FedAvg) and updates

    ``c <- c + (1 / N) sum_i (c_i+ - c_i)``

over the ``N`` clients of the federation (the paper's ``|S| / N`` times the
mean over the ``|S|`` replies). Both come from the round's
:meth:`~fedmosaic.federation.round.RoundContext.exchange_aggregated`, the
model as the weighted mean and the changes as the unweighted sum, so that
with secure aggregation the server sees neither a client's model nor its
change of control variate. The correction is added to each parameter's
gradient before the optimizer's step, so momentum and weight decay act on the
corrected gradient, as in common implementations.
"""
