"""membrane: the agent proposes; the membrane disposes."""

__version__ = "0.1.0"
