"""The append-only, hash-chained trace."""

from harness.trace.chain import TraceWriter, VerifyResult, read_trace, verify_chain
from harness.trace.events import EVENT_ADAPTER, Event

__all__ = ["EVENT_ADAPTER", "Event", "TraceWriter", "VerifyResult", "read_trace", "verify_chain"]
