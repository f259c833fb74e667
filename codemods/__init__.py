"""diffusers-codemod: find and fix performance anti-patterns in diffusers (static; never imports torch)."""

__version__ = "0.1.0"
