"""One lifecycle for every object that launches compiled code: open, then closed (or unloaded), once.

:class:`Lifecycle` is the base of :class:`~cute_bind.launch.PreparedLaunch`,
:class:`~cute_bind.launch.tvm_ffi.PreparedTvmFfiLaunch` and
:class:`cute_bind.graph.Graph` (httpx's ``BaseTransport`` is the model). It owns:

- the state (:class:`HandleState`): ``OPEN`` until :meth:`Lifecycle.close`
  (``CLOSED``) or the compiled module's unload (``UNLOADED``); leaving ``OPEN``
  is final and happens once, also when two threads close at the same time
  (the transition takes a one-element token with ``list.pop``, atomic without
  a lock, so a fork while another thread closes leaves nothing held);
- ``close()``: idempotent; ``with handle:`` closes on leaving the block;
- the error a refused launch raises (:meth:`Lifecycle._refusal_error`: CB404
  for a closed handle, CB402 for an unloaded module, each class's own for
  what it says), raised the same way by every path;
- the one place that tells the launch paths they are refused
  (:meth:`Lifecycle._refuse_launches`): the C launcher, when there is one,
  through its ``poison(refuse)`` (both C launchers take it), and the Python
  paths through the handle's *gate*, a one-element list holding what a
  launch calls (the entry point while open, ``refuse`` after), read right
  before each call. Nothing rewrites a generated function's closure;
- the finalizer policy: closing only drops references, which collection
  drops too, so a handle needs no ``__del__``; an object holding outside
  resources (a graph's driver objects) calls :meth:`Lifecycle._close_quietly`
  from its ``__del__``, which never raises.

Subclasses give their kernel name (:attr:`Lifecycle.kernel_name`) and free
what they hold in :meth:`Lifecycle._release` (run once, after the launch
paths are refused).
"""

from __future__ import annotations

import enum
from typing import Any, Callable, ClassVar, NoReturn, Protocol, TypeVar

from .. import diagnostics as D

__all__ = ["HandleState", "Lifecycle"]


class HandleState(enum.Enum):
    """A handle's lifecycle: one explicit state instead of scattered flags.

    ``OPEN`` -> ``CLOSED`` (``close()``, also on leaving a ``with`` block) or
    ``OPEN`` -> ``UNLOADED`` (the compiled module was unloaded). Leaving
    ``OPEN`` is final: every launch path is refused (every later launch, also
    through a saved ``launch`` reference, raises CB404/CB402) and what kept the
    compiled function loaded is dropped, a running launch keeping its own
    reference until it returns. Independently of the state, a handle is
    *busy* while one launch writes its storage and runs the entry point; a
    second launch meanwhile raises CB403.
    """

    OPEN = "open"
    CLOSED = "closed"
    UNLOADED = "unloaded"


#: a refusal: the catalog entry and the message fields it is raised with
Refusal = tuple[D.Diagnostic, dict[str, Any]]

#: what a refused launch of a handle raises, per state left to
_REFUSALS: dict[HandleState, Refusal] = {
    HandleState.CLOSED: (D.HANDLE_CLOSED, {"expected": "an open handle"}),
    HandleState.UNLOADED: (D.MODULE_UNLOADED, {"expected": "a loaded module"}),
}


class _Poisonable(Protocol):
    """A C launcher, as the transition out of OPEN tells it (``_claunch``/``_ctvmffi.Launcher``)."""

    def poison(self, refuse: Callable[[], object], /) -> None: ...


_L = TypeVar("_L", bound="Lifecycle")


class Lifecycle:
    """Base of handles and graphs: open/closed state, idempotent close, context manager, one refusal.

    Subclasses call :meth:`_open` in ``__init__``, set :attr:`_native` to
    their C launcher (or leave it None) and :attr:`_gate` to the one-element
    list their Python paths call through, and implement :meth:`_release`.
    """

    #: what a refused launch raises, by state (a subclass may say it in its own words)
    REFUSALS: ClassVar[dict[HandleState, Refusal]] = _REFUSALS

    _state: HandleState
    #: taken (popped) by the one transition out of OPEN
    _open_token: list[bool]
    #: the C launcher told at the transition (``poison(refuse)``), or None
    _native: _Poisonable | None
    #: ``[callable]``: what the Python launch paths call (the entry point while open, the refusal after)
    _gate: list[Any]

    def _open(self, gate: object = None) -> None:
        self._state = HandleState.OPEN
        self._open_token = [True]
        self._native = None
        self._gate = [gate]

    @property
    def kernel_name(self) -> str:
        """Name of the kernel (the graph's first kernel) the refusal names."""
        raise NotImplementedError

    @property
    def state(self) -> HandleState:
        """The lifecycle state (:class:`HandleState`)."""
        return self._state

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (an unloaded module is :attr:`state` ``UNLOADED``)."""
        return self._state is HandleState.CLOSED

    def close(self) -> None:
        """Leave OPEN for good: later launches raise CB404 and what this object held is released.

        Idempotent, and safe from any thread (a launch running meanwhile
        completes; the next one is refused).
        """
        self._leave_state(HandleState.CLOSED)

    def __enter__(self: _L) -> _L:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.close()

    def _refusal_error(self, state: HandleState | None = None, **fields: object) -> D.CuteBindError:
        """The catalog error a use refused in ``state`` (default: the current one) raises; ``fields``
        override the message fields of :attr:`REFUSALS` (a graph names what was attempted)."""
        diagnostic, defaults = self.REFUSALS[state or self._state]
        return D.error(diagnostic, kernel=self.kernel_name, **{**defaults, **fields})

    def _leave_state(self, state: HandleState) -> bool:
        """Leave OPEN for ``state``, once (False when already left): refuse every launch path, then release."""
        try:
            self._open_token.pop()
        except IndexError:
            return False
        self._state = state
        self._refuse_launches(self._refuser(state))
        self._release(state)
        return True

    def _refuser(self, state: HandleState) -> Callable[..., NoReturn]:
        """The refusal every launch path calls once ``state`` is reached: a new catalog error per call.

        It holds the kernel name, not this object: the C launcher keeps it, and
        a reference back would make the handle a reference cycle.
        """
        diagnostic, fields = self.REFUSALS[state]
        kernel = self.kernel_name

        def refuse(*_: object) -> NoReturn:
            raise D.error(diagnostic, kernel=kernel, **fields)

        return refuse

    def _refuse_launches(self, refuse: Callable[..., NoReturn]) -> None:
        """The one place the launch paths learn the object left OPEN (C launcher and Python gate)."""
        self._gate[0] = refuse
        if self._native is not None:
            self._native.poison(refuse)

    def _release(self, state: HandleState) -> None:
        """Free what the object holds (run once, after the launch paths are refused)."""

    def _close_quietly(self) -> None:
        """The finalizer's close: never raises (for a subclass's ``__del__``)."""
        try:
            self.close()
        except Exception:  # noqa: S110 - never raise from a finaliser
            pass
