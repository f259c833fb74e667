"""The cached per-device getter DIF001 and DIF006 add to a class, and the rewrite of the sites it replaces.

`plan` plans the getter of a constant table and every `.to(device)` it replaces; `builds` (DIF006) and
`lists` (tables kept in a list) plan their variants; `decorator` writes the getter with the cache the
tree offers; `names`, `sites`, `pairs`, `stores` and `rewrites` are the pieces they share.

May import: codemods, codemods.project, codemods.analysis.values, codemods.analysis.models, codemods.edits
"""
