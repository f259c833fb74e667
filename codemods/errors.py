"""The errors that end a run before anything is written: one line on stderr, exit code 2."""


class UsageError(Exception):
    """A bad argument: the run does nothing."""


class RunAborted(Exception):
    """The run could not finish (a worker process died): nothing was written."""
