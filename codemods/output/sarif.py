"""SARIF 2.1.0 for code scanning: each finding with its rule, location, fingerprint and, where the run proved
one, its fix (`sarif_fixes`)."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from codemods import __version__
from codemods.engine.run_result import Mode, RunResult
from codemods.findings import Finding
from codemods.output.report import cost_note, display_path, shown
from codemods.output.rule_docs import TOOL_URL

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def as_sarif(result: RunResult, include_cold: bool = False) -> str:
    """SARIF 2.1.0 for code scanning. A run that wrote nothing (--check, --diff) reports every finding, and
    each fix it proved comes with the replacement text (`fixes`); a run that wrote its fixes reports what remains.
    """
    from codemods.output.sarif_fixes import file_fixes

    rules = sorted(result.rules, key=lambda r: r.code)
    rule_index = {rule.code: position for position, rule in enumerate(rules)}
    results: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    fixes: dict[int, dict[str, Any]] = {}
    if result.mode is not Mode.WRITE:
        for path, (before, after) in result.changes.items():
            fixed = [f for f in result.findings if f.fixed and f.path == path]
            fixes |= file_fixes(fixed, before, after, _uri(path))
    for finding in shown(result.remaining if result.mode is Mode.WRITE else result.findings, include_cold):
        fingerprint = _fingerprint(finding)
        seen[fingerprint] = seen.get(fingerprint, 0) + 1
        fix = fixes.get(id(finding))
        results.append(
            {
                "ruleId": finding.code,
                "ruleIndex": rule_index[finding.code],
                "level": "warning",
                "message": {"text": finding.message + cost_note(finding)},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": _uri(finding.path)},
                            "region": {
                                "startLine": finding.line,
                                "startColumn": finding.column + 1,
                                "endLine": finding.end_line,
                                "endColumn": finding.end_column + 1,
                            },
                        }
                    }
                ],
                "partialFingerprints": {"codemodFinding/v1": f"{fingerprint}:{seen[fingerprint]}"},
                "properties": {
                    "fixSafety": finding.fix_safety.value,
                    "frequency": finding.cost.frequency.name.lower() if finding.cost else None,
                    "pattern": finding.pattern,
                },
                **({"fixes": [fix]} if fix else {}),
            }
        )
    document = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "diffusers-codemod",
                        "version": __version__,
                        "informationUri": TOOL_URL,
                        "rules": [_sarif_rule(rule) for rule in rules],
                    }
                },
                "results": results,
                "invocations": [
                    {
                        "executionSuccessful": not result.errors,
                        "toolExecutionNotifications": [
                            {
                                "level": "error",
                                "message": {"text": error.message},
                                "locations": [
                                    {"physicalLocation": {"artifactLocation": {"uri": display_path(error.path)}}}
                                ],
                            }
                            for error in result.errors
                        ],
                    }
                ],
            }
        ],
    }
    return json.dumps(document, indent=2)


def _uri(path: str) -> str:
    return display_path(path).replace(os.sep, "/")


def _sarif_rule(rule: Any) -> dict[str, Any]:
    from codemods.output.rule_docs import docs_url, explain_text

    help_text = explain_text(rule.code)  # what `codemod explain CODE` prints
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.summary},
        "help": {"text": help_text, "markdown": help_text},
        "helpUri": docs_url(rule.code),
        "defaultConfiguration": {"level": "warning"},
        "properties": {"fixSafety": rule.fix_label(), "tags": ["performance"]},
    }


def _fingerprint(finding: Finding) -> str:
    # Stable across unrelated edits in the file (no line number); repeats are told apart by their order.
    key = f"{finding.code}|{display_path(finding.path)}|{finding.message}"
    return hashlib.sha256(key.encode()).hexdigest()[:32]
