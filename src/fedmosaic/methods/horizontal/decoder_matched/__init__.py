"""FedAvg with FedCFA's decoder step: a control that separates counterfactuals from step size.

FedCFA's client loss is ``w_ce CE + w_fdc FDC + w_pos CE(positive) +
w_neg softCE(negative)``, and its counterfactual terms train the decoder only
(the layers after FedCFA's split). With the reference weights 1 : 5 : 5 the
decoder's gradient is the sum of three cross-entropy gradients of similar
size, so its step is about ``1 + 5 + 5 = 11`` times FedAvg's, while the
encoder's is FedAvg's. This method is FedAvg whose decoder's gradient is
multiplied by ``decoder_scale`` before the optimizer's step: the same as
raising the decoder's learning rate by that factor, except that weight decay
is not scaled (exactly as in FedCFA, whose weights scale the loss, not the
decay). If FedCFA's lead over FedAvg is only its larger decoder step, this
control takes the lead too.
"""
