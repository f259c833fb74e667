"""What the tool knows of the tree it runs on: files, facts across files, copies, config, the checkout.

Source files read and written as Python does (`files`), where a tree's package and tests lie
(`layout`), per-file facts and their cross-file index (`facts`, `index`), `# Copied from` groups
(`copies`), `[tool.codemod]` (`config`), what the checkout's test modules say, read once for every
reader in one walk (`test_modules`, `test_sources`, `test_walk`), the tests a class attribute turns
on (`gated_tests`), what diffusers accepts no changes to (`frozen`), user paths inside a tree, and
the target's pinned tools.

May import: codemods
"""
