"""Type stub of the optional C fast path of prepared TVM-FFI launches (cute_bind/launch/_ctvmffi.c)."""

from typing import Any, Callable

class Launcher:
    def __init__(
        self,
        entry: int,
        self_handle: int,
        set_stream: int,
        move_error: int,
        dec_ref: int,
        kinds: bytes,
        specs: tuple[Any, ...],
        defaults: tuple[Any, ...],
        required: object,
        slow: Callable[[tuple[Any, ...], dict[str, Any]], Any],
        fail: Callable[[str, str, str], Any],
        classify: Callable[[type], str],
        keep: object,
    ) -> None: ...
    def launch(self, *args: Any, **kwargs: Any) -> Any: ...
    def close(self, refuse: Callable[[tuple[Any, ...], dict[str, Any]], Any]) -> None: ...
