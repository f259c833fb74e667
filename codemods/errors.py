"""The errors that end a run: one line on stderr, exit code 2 (130 for an interrupt)."""


class UsageError(Exception):
    """A bad argument: the run does nothing."""


class RunAborted(Exception):
    """The run could not finish (a worker process died): nothing was written."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C ended the run; the message is the one line saying what was written (callers that do not
    catch it see the KeyboardInterrupt they expect). Exit code 130, as a shell gives a SIGINT."""
