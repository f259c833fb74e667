"""Values and bindings within one function or file: what binds a name, which assignments reach a use,
what class an expression holds, what a `.to(...)` moves where, and which tensors are built from constants.

May import: codemods
"""
