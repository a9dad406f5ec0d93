"""Model files: every run's tested model as safetensors weights and a JSON card, and loading them back.

:func:`fedmosaic.load_model` (``fedmosaic.models.loader.load_model``) needs
nothing but the model folder: no configuration, no data.
"""
