"""Agents: the protocol every model adapter implements, and the registry that builds them."""
