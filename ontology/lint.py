"""Every binding problem of a pack's ontology at once, for `membrane pack check`.

`ontology.pools` raises the first `PackError` it meets, which is right before a batch; an
author fixing a pack wants them all: `binding_problems` (one walk over the bindings in
`ontology.pools`, which raises its first problem and lists them here) gives each table's
`row_class` that is no class, each bound column's `property` that is no object or data
property of the right kind, and a text column's range that is no string.
"""

from __future__ import annotations

from ontology.pools import binding_problems

__all__ = ["binding_problems"]
