"""FedCFA (AAAI 2025): counterfactual federated learning against Simpson's paradox.

Each model is cut into an encoder (input -> factors) and a decoder (factors ->
logits). Clients share only chunk means of their data; the server pools them
into a global average dataset and broadcasts it with the model. Clients train
on their samples plus counterfactual ones, whose least (positive) or most
(negative) label-relevant factors are replaced by those of a global mean, with
a factor decorrelation penalty; the server averages the models as FedAvg does.
"""
