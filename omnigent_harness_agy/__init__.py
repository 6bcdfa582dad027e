"""The omnigent adapter for omnigent-agy, imported as ``omnigent.community.harness.agy``.

Only this leaf package is installed under omnigent's namespace; everything with logic in
it lives in the host-agnostic ``omnigent_agy`` core.
"""
