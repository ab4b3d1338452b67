"""Prepared graphs: prepared launches recorded as one CUDA graph, replayed with new values.

``cute_bind.graph(stream)`` records (:mod:`.recorder`), :mod:`.mapping` finds
where each slot's value lands in the captured kernel nodes, :mod:`.driver`
holds the driver calls (``cuda.bindings``) behind one small interface and
:mod:`.fake` emulates them on the CPU.
"""

from __future__ import annotations

from .driver import CudaDriver, Driver
from .recorder import Finding, Graph, GraphStats, Policy, Step, graph

__all__ = ["CudaDriver", "Driver", "Finding", "Graph", "GraphStats", "Policy", "Step", "graph"]
