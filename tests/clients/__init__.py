"""The client suite: production CuTe DSL packages (quack-kernels, flash-attn-4) through cute_bind's two doors.

``recorder.py`` drives each package's own Python entry on the CPU, records
every ``cute.compile`` it makes and tries ``cute_bind.prepare`` and
``cute_bind.kernel`` on each; ``test_clients.py`` asserts both doors. The
packages are pinned in ``requirements.txt`` (a separate environment: they
patch DSL internals at import, so the suite runs them in a subprocess).
"""
