"""Shared program analysis the rules build on (static: no torch, no diffusers)."""
