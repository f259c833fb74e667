"""Models and hot paths: which code runs per step, per forward or once (`hot_paths`, and the branches in
hot code that are cold, `cold_branches`), which models a pipeline runs each denoising step (`denoisers`),
what a module builds and keeps on `self` (`model_graph`, `block_stacks`, `attributes`, `tensor_lists`,
`init_constants`), and how outputs are read (`output_*`).

May import: codemods, codemods.project, codemods.analysis.values
"""
