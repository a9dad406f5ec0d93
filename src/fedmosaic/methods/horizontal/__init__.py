"""The horizontal methods: every client holds whole samples of the same features.

Each method is a package (``params.py``, ``client.py``, ``server.py``, ``build.py``);
what several of them share sits here: the task they are built from
(``task.py``), the classifiers (``models.py``), the probes added to every
evaluation (``probes.py``) and gradient hooks (``gradients.py``).
"""
