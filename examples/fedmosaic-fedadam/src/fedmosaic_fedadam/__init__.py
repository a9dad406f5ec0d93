"""fedmosaic-fedadam: a fedmosaic plugin adding FedAdam, a tiny CNN and a synthetic dataset.

fedmosaic finds the components through the entry points of this package's
``pyproject.toml``, one module each, imported only when fedmosaic first
reads that kind of component:

- ``fedadam`` (:data:`fedmosaic_fedadam.method.FEDADAM`): FedAdam (Reddi
  et al., 2021), the server's Adam step on the mean client update;
- ``tiny-convnet`` (:data:`fedmosaic_fedadam.model.TINY_CONVNET`): two 3x3
  convolutions and a linear layer, for ``[model] kind``;
- ``blobs`` (:data:`fedmosaic_fedadam.data.BLOBS`): four Gaussian blobs of
  8x8 images, made from the experiment's seed, for ``data.dataset``.
"""

__version__ = "0.1.0"
