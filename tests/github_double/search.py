"""`GET /search/issues`: GitHub's query syntax, for the qualifiers a PR bot uses.

Free text is matched the way GitHub's index does, word by word rather than by substring: the
text is split into alphanumeric words, and a term (or "quoted phrase") matches when its words
appear consecutively. So `abc` does not find `abcdef`, but `fp-1a2b` finds `fp 1a2b`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import field_error, validation_failed
from .model import Issue, PullRequest

SEARCH_DOCS = "https://docs.github.com/rest/search/search#search-issues-and-pull-requests"
_TOKEN = re.compile(r'(?P<key>[a-z-]+):(?:"(?P<quoted_value>[^"]*)"|(?P<value>\S+))|"(?P<phrase>[^"]*)"|(?P<word>\S+)')
_QUALIFIERS = {"repo", "is", "type", "state", "author", "in", "label", "head", "base"}
_TEXT_FIELDS = ("title", "body", "comments")


def words(text: str) -> list[str]:
    return re.findall(r"[0-9a-z]+", text.lower())


def _contains_run(haystack: list[str], needle: list[str]) -> bool:
    return any(haystack[i : i + len(needle)] == needle for i in range(len(haystack) - len(needle) + 1))


@dataclass
class IssueQuery:
    terms: list[list[str]] = field(default_factory=list)  # each term as its run of words
    qualifiers: list[tuple[str, str]] = field(default_factory=list)
    fields: tuple[str, ...] = ("title", "body")  # GitHub's default scope, without `in:`

    @classmethod
    def parse(cls, q: str | None) -> IssueQuery:
        if not q or not q.strip():
            raise validation_failed(SEARCH_DOCS, field_error("Search", "q", "missing"))
        query = cls()
        for match in _TOKEN.finditer(q):
            key = match["key"]
            if key in _QUALIFIERS:
                value = match["quoted_value"] if match["quoted_value"] is not None else match["value"]
                if key == "in":
                    query.fields = tuple(f for f in value.lower().split(",") if f in _TEXT_FIELDS)
                else:
                    query.qualifiers.append((key, value))
                continue
            # Unknown qualifiers are plain text to GitHub, so `fingerprint:ab12` searches for its words.
            text = match["phrase"] if match["phrase"] is not None else match[0]
            if term := words(text):
                query.terms.append(term)
        return query

    def matches(self, item: PullRequest | Issue, repo_full_name: str) -> bool:
        return all(self._qualifier_holds(key, value, item, repo_full_name) for key, value in self.qualifiers) and all(
            any(_contains_run(words(text), term) for text in self._texts(item)) for term in self.terms
        )

    def _texts(self, pull: PullRequest | Issue) -> list[str]:
        texts = {"title": [pull.title], "body": [pull.body or ""], "comments": [c.body for c in pull.comments]}
        return [text for name in self.fields for text in texts[name]]

    @staticmethod
    def _qualifier_holds(key: str, value: str, item: PullRequest | Issue, repo_full_name: str) -> bool:
        value = value.lower()
        is_pull = isinstance(item, PullRequest)
        if key == "repo":
            return value == repo_full_name.lower()
        if key in ("is", "type", "state"):
            merged = is_pull and item.merged
            return {
                "pr": is_pull,
                "issue": not is_pull,
                "open": item.state == "open",
                "closed": item.state == "closed",
                "merged": merged,
                "unmerged": is_pull and item.state == "closed" and not merged,
            }.get(value, False)
        if key == "author":
            return item.author.login.lower() == value
        if key == "label":
            return any(label.name.lower() == value for label in item.labels)
        if not is_pull:  # head: and base: name branches, which issues do not have
            return False
        if key == "head":
            return item.head_ref.lower() == value
        return item.base_ref.lower() == value  # base


def search_issues(
    items: list[PullRequest | Issue], repo_full_name: str, q: str | None, sort: str | None, order: str | None
) -> list[PullRequest | Issue]:
    query = IssueQuery.parse(q)
    found = [item for item in items if query.matches(item, repo_full_name)]
    sort_keys = {
        # "Best match" ranking is GitHub's secret; newest first is a stable stand-in.
        None: lambda p: (p.created_at, p.number),
        "created": lambda p: (p.created_at, p.number),
        "updated": lambda p: (p.updated_at, p.number),
        "comments": lambda p: (len(p.comments), p.number),
    }
    if sort not in sort_keys:
        raise validation_failed(SEARCH_DOCS, field_error("Search", "sort", "invalid"))
    found.sort(key=sort_keys[sort], reverse=(order or "desc") == "desc")
    return found
