"""Static tools: ``cute-bind check``, the mypy plugin and the language server's engine, on source text alone.

``rules`` reads a module's AST and reports the catalog's definition-time
codes (it never imports the DSL or the checked code), ``checker`` is the
command line over it, ``plugin`` is the mypy plugin (imported by mypy as
``cute_bind.mypy``). ``incremental`` runs the rules on a file that changes
(the language server, :mod:`cute_bind.lsp`), ``fixes`` turns the catalog's
fixes into edits where they are mechanical, ``describe`` says what a
parameter's slot takes and whether it is in the compile key (hover),
``config`` reads ``[tool.cute-bind]`` for the check and the server, and
``exports`` holds ``cute_bind.__all__`` as data. All share the whitelist
(``cute_bind._whitelist``) with the runtime classification, so they agree
with decoration by construction; the package imports only ``diagnostics`` and
``_whitelist`` (tests/static/test_exports.py).
"""
