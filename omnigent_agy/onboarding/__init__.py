"""Onboarding: configuration, models, checks and the failures a person can act on.

Owns the config block (``config``), agy's model catalog (``catalog``), the doctor's checks and
pre-flight (``checks``, ``instructions``, ``doctor``) and the catalogue of coded failures
(``failures``). May import ``rpc``, ``agy``, ``reading`` and ``interactions``.
"""
