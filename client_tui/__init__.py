"""The terminal client (`ttt play`): a Textual app over the shared protocol client.

`model` holds what the client knows (pure), `link` the connection, `board` and
`screens` draw, `app` wires them together.
"""
