"""Read one text file out of a downloaded corpus: a member of a .tgz/.tar.gz/
.tar or .zip archive, or a file in a folder, without unpacking the rest."""

import contextlib
import io
import os
import tarfile
import zipfile

from mass_tools.textio import InputError


@contextlib.contextmanager
def open_member(path, member):
    """A binary stream of ``member`` of the archive (or folder) ``path``."""
    if os.path.isdir(path):
        full = os.path.join(path, member)
        if not os.path.isfile(full):
            raise InputError(f"{full}: no such file")
        with open(full, "rb") as stream:
            yield stream
    elif path.endswith(".zip"):
        with zipfile.ZipFile(path) as archive:
            if member not in archive.namelist():
                raise InputError(_missing(path, member, archive.namelist()))
            with archive.open(member) as stream:
                yield stream
    else:
        with tarfile.open(path) as archive:
            try:
                stream = archive.extractfile(member)
            except KeyError:
                raise InputError(_missing(path, member, archive.getnames())) from None
            if stream is None:
                raise InputError(f"{path}: {member} is not a file")
            with stream:
                yield stream


def _missing(path, member, names):
    files = ", ".join(sorted(names)[:8])
    return f"{path}: has no {member} (it has {files}...); check the member names"


def member_lines(path, member):
    """The lines of ``member`` in ``path`` as text, without their newlines."""
    with open_member(path, member) as stream:
        text = io.TextIOWrapper(stream, encoding="utf-8", errors="replace", newline="\n")
        for line in text:
            yield line.rstrip("\r\n")
