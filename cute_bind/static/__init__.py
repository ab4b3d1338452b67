"""Static tools: ``cute-bind check`` and the mypy plugin, on source text alone.

``rules`` reads a module's AST and reports the catalog's definition-time
codes (it never imports the DSL or the checked code), ``checker`` is the
command line over it, ``plugin`` is the mypy plugin (imported by mypy as
``cute_bind.mypy``). Both share the whitelist (``cute_bind._whitelist``) with
the runtime classification, so they agree with decoration by construction.
"""
