"""The strategies a bot can play; build them through `bots.strategy`."""
