"""What every party of ttt-arena shares: the pure rules engine and the wire protocol.

`protocol.rules` is pure (no I/O, clock, randomness or pydantic); the message
models live in `protocol.messages` and are imported only by those who need them.
"""

__version__ = "0.1.0"
