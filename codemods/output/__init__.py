"""How a run is shown: text for people, JSON for tools, SARIF (with its fixes) for code scanning, GitHub
annotations for CI, and each rule's documentation as users meet it (`codemod explain`).

May import: codemods, codemods.engine, codemods.rules
"""
