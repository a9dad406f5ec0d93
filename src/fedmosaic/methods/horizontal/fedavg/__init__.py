"""FedAvg (McMahan et al., 2017) and FedProx (Li et al., 2020).

The server sends the global model to the selected clients, each trains it on
its own data for a few epochs and sends it back with its number of examples,
and the server replaces the global model by the example-weighted average of
the replies, tensor by tensor. FedProx adds ``mu / 2 * ||w - w_global||^2`` to
each client's loss.
"""
