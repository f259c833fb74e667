"""The rules GitHub enforces on labels, for pull requests and issues alike.

A part of `HostedRepository` (repository.py), which holds the state, the id source and the lock, and
finds the item a number names; kept apart because labels are a REST area of their own.
"""

from __future__ import annotations

import re
import threading

from .errors import ApiError, error_body, field_error, not_found, validation_failed
from .model import IdSource, Issue, Label, PullRequest, RepositoryState

CREATE_LABEL_DOCS = "https://docs.github.com/rest/issues/labels#create-a-label"
LABELS_DOCS = "https://docs.github.com/rest/issues/labels"
# The color GitHub gives labels it creates implicitly, when an unknown name is added to an issue.
IMPLICIT_LABEL_COLOR = "ededed"
HEX_COLOR = re.compile(r"[0-9a-fA-F]{6}")


class LabelRules:
    state: RepositoryState
    ids: IdSource
    lock: threading.RLock

    def item(self, number: int) -> PullRequest | Issue:
        raise NotImplementedError  # HostedRepository finds pull requests and issues


    def label(self, name: str) -> Label:
        with self.lock:
            if name.lower() not in self.state.labels:
                raise not_found()
            return self.state.labels[name.lower()]

    def labels(self) -> list[Label]:
        with self.lock:
            return sorted(self.state.labels.values(), key=lambda label: label.name.lower())

    def create_label(self, name: str | None, color: str | None, description: str | None) -> Label:
        with self.lock:
            if not name:
                raise validation_failed(CREATE_LABEL_DOCS, field_error("Label", "name", "missing_field"))
            color = (color or IMPLICIT_LABEL_COLOR).removeprefix("#")
            if not HEX_COLOR.fullmatch(color):
                raise validation_failed(CREATE_LABEL_DOCS, field_error("Label", "color", "invalid"))
            if name.lower() in self.state.labels:
                raise validation_failed(CREATE_LABEL_DOCS, field_error("Label", "name", "already_exists"))
            label = Label(self.ids.next(), name, color.lower(), description)
            self.state.labels[name.lower()] = label
            return label

    def add_labels(self, number: int, names: list[str]) -> list[Label]:
        with self.lock:
            item = self.item(number)
            for name in names:
                label = self.state.labels.get(name.lower()) or self.create_label(name, None, None)
                if label not in item.labels:
                    item.labels.append(label)
            item.touch()
            return list(item.labels)

    def set_labels(self, number: int, names: list[str]) -> list[Label]:
        with self.lock:
            self.item(number).labels = []
            return self.add_labels(number, names)

    def remove_label(self, number: int, name: str) -> list[Label]:
        with self.lock:
            item = self.item(number)
            kept = [label for label in item.labels if label.name.lower() != name.lower()]
            if len(kept) == len(item.labels):
                raise ApiError(404, error_body(404, "Label does not exist", LABELS_DOCS))
            item.labels = kept
            item.touch()
            return list(kept)
