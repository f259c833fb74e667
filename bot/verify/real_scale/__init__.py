"""The real-scale run: each change measured again on its architecture at released width, on CUDA.

`cases` names what runs (a model at its released configuration, capped at a few blocks, or a
pipeline's own denoising loop from precomputed embeddings), `builders` builds it straight on
the device in bf16 with random weights, `measure` times it in a worker (CUDA events, the host
clock, syncs over 50 ms, host wait, peak memory; eager and compiled), `run` drives both trees
from the parent and pairs their results, and `table` renders them before -> after.

May import: bot.verify.census, bot.verify.planning, bot.verify.running, bot.verify.targets
"""
