from typing import Any

class EagerOp:
    """The C eager call of one cute_bind.torch op (cute_bind.torch.eager)."""

    def __init__(self, spec: Any, /) -> None: ...
    def call(self, *args: Any, **kwargs: Any) -> Any: ...
