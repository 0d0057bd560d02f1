"""What every party of ttt-arena shares: the pure rules engine and the wire protocol.

`protocol.rules` is pure (no I/O, clock, randomness or pydantic); the message
models live in `protocol.messages` and are imported only by those who need them.
What every client shares sits here too, below the shells: `protocol.client` (the
asyncio client), `protocol.session` (its sans-I/O part), `protocol.reconnect`
(coming back after a drop), `protocol.pacing` (backoff, rate pacing) and
`protocol.tokens` (token files).
"""

__version__ = "0.1.0"
