"""Planning a verification: what the engine changed (`changes`), which targets reach each change (`plan`),
and which of the checkout's own tests cover the changed files (`covering_tests`). No torch.

May import: codemods, codemods.analysis.models, codemods.engine, codemods.project, codemods.rules, bot.verify.targets
"""
