"""diffusers-codemod's static side: find and fix performance anti-patterns in diffusers. Never imports torch.

Packages by role, lower ones never reaching up: `project` (what the tool knows of the tree), `analysis`
(program facts by what they know), `edits` (rewrites the fixes share), `rules` (one a module), `engine`
(the one data path: discover, scan, fix, prove, write) and `output` (text, JSON, SARIF, docs). The modules
here are the vocabulary all of them share: `source` (one file as the rules see it), `node_index` (its
nodes by kind and subtree, from one walk), `lines` (lines numbered as Python numbers them), `triggers`
(regexes found from the literals their matches begin with), `findings` (what rules report), `errors`
(what ends a run), `lazy` (libcst imported on first use) and `tool_version` (this tool's version and
commit, and the commit the docs pin).

May import: only its own modules
"""

__version__ = "0.1.0"
