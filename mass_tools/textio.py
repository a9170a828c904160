"""Line reading and atomic writing shared by the tools of mass_tools and the projects."""

import os
import sys
import tempfile


class InputError(Exception):
    """Bad input: the message says which file and line, and what to do."""


def read_lines(path=None, errors="strict"):
    """Yield the lines of ``path`` (stdin when None or "-") without newlines.

    Invalid UTF-8 raises InputError naming the file and line, unless
    ``errors`` is "replace" (U+FFFD) or "ignore".
    """
    name = "<stdin>" if path in (None, "-") else path
    stream = sys.stdin.buffer if name == "<stdin>" else open(path, "rb")
    try:
        for number, raw in enumerate(stream, start=1):
            try:
                text = raw.decode("utf-8", errors=errors)
            except UnicodeDecodeError as err:
                raise InputError(
                    f"{name}, line {number}: not valid UTF-8 ({err.reason} at byte "
                    f"{err.start}). Convert the file to UTF-8 (e.g. iconv -f latin1 "
                    f"-t utf-8) or pass --encoding-errors replace to keep going."
                ) from None
            yield text.rstrip("\r\n")
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


class AtomicWriter:
    """Write text to ``path`` through a temporary file renamed on success,
    so an interrupted run never leaves a half-written output behind.
    ``path`` None or "-" writes to stdout."""

    def __init__(self, path=None):
        self.path = None if path in (None, "-") else path
        self._tmp = None

    def __enter__(self):
        if self.path is None:
            return sys.stdout
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        fd, self._tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
        self._file = os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        return self._file

    def __exit__(self, exc_type, exc, tb):
        if self.path is None:
            sys.stdout.flush()
            return False
        self._file.close()
        if exc_type is None:
            os.replace(self._tmp, self.path)
        else:
            os.unlink(self._tmp)
        return False


def run_main(main):
    """Run ``main()``; report InputError as one line on stderr, exit status 1."""
    try:
        main()
    except InputError as err:
        sys.stderr.write(f"error: {err}\n")
        sys.exit(1)
