"""Type stub of the optional C fast path (cute_bind/_claunch.c)."""

from typing import Any, Callable

class Launcher:
    def __init__(
        self,
        entry: int,
        argv: int,
        storage: int,
        result: int,
        fmts: bytes,
        classes: bytes,
        offsets: tuple[int, ...],
        extras: tuple[Any, ...],
        defaults: tuple[Any, ...],
        required: object,
        slow: Callable[[tuple[Any, ...], tuple[Any, ...], dict[str, Any]], int | None],
        fail: Callable[[], None],
        ret: int | None,
        keep: object,
        release_gil: bool = ...,
    ) -> None: ...
    def launch(self, *args: Any, **kwargs: Any) -> int | None: ...
    def try_launch(self, *args: Any, **kwargs: Any) -> Any: ...
    def poison(self, refuse: Callable[[], None]) -> None: ...

def configure(array_layout: Any, ctypes_layout: Any, torch_reader: Any = ...) -> None: ...
def counts() -> dict[str, int]: ...
