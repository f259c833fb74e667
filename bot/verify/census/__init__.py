"""The census: host<->device copies and host waits, counted on the emulated device (`emulated`, with its
device and tensors) or from a CUDA profile (`cuda`), by statement; the report both produce (`result`).
It imports torch; nothing of the project above it.

May import: only its own modules
"""
