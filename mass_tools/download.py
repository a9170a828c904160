"""Download a file, resuming a broken transfer, and check it before it gets its name.

    python -m mass_tools.download URL PATH [--md5 HEX] [--size BYTES]

PATH.part holds the bytes received so far: a rerun asks the server for the
rest (an HTTP Range request) and starts over where the server cannot resume.
The file is renamed to PATH only when it is whole: as long as the server
said (and --size), with the checksum --md5, and, for .gz, .tgz, .tar.gz,
.tar and .zip files, readable to its end. A file that fails the check is
moved to PATH.bad and the command stops saying so. An existing PATH counts
as done and is not fetched again. file:// and http(s):// URLs both work.
"""

import argparse
import gzip
import hashlib
import http.client
import os
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
import zlib

from mass_tools.textio import InputError, run_main

CHUNK = 1 << 20
PROGRESS_EVERY_S = 10


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("url")
    parser.add_argument("path")
    parser.add_argument("--md5", help="expected MD5 checksum (hex), where one is published")
    parser.add_argument("--size", type=int, help="expected size in bytes, where one is published")
    return parser.parse_args(argv)


def _megabytes(n):
    return f"{n / 1e6:.1f} MB"


def _open(url, offset):
    """The response for ``url`` from byte ``offset`` on, and whether it starts there."""
    request = urllib.request.Request(url, headers={"User-Agent": "mass-tools"})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    try:
        response = urllib.request.urlopen(request, timeout=60)
    except urllib.error.HTTPError as err:
        if err.code == 416 and offset:  # nothing left to send: .part is whole
            return None, True
        raise InputError(f"{url}: the server answered {err.code} {err.reason}; "
                         "check the URL (and the year or language in it)") from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise InputError(f"{url}: cannot connect ({reason}); check the URL and the "
                         "network, then run again") from None
    return response, offset > 0 and getattr(response, "status", None) == 206


def _expected_total(response, offset):
    """The file's full size as the server announces it, or None."""
    content_range = response.headers.get("Content-Range", "")
    if "/" in content_range and not content_range.endswith("/*"):
        return int(content_range.rsplit("/", 1)[1])
    length = response.headers.get("Content-Length")
    return offset + int(length) if length is not None else None


def _copy(response, out, url, done, total):
    """Append ``response`` to ``out``, reporting progress; the bytes written in all."""
    last = time.monotonic()
    read = getattr(response, "read1", response.read)  # what has come, not a full CHUNK
    while chunk := read(CHUNK):
        out.write(chunk)
        out.flush()  # on disk as it comes: a killed run loses nothing
        done += len(chunk)
        if time.monotonic() - last >= PROGRESS_EVERY_S:
            last = time.monotonic()
            share = f" of {_megabytes(total)} ({100 * done // total}%)" if total else ""
            sys.stderr.write(f"  {os.path.basename(url)}: {_megabytes(done)}{share}\n")
    return done


def fetch(url, part):
    """Bring ``part`` up to the whole of ``url``, resuming where it stopped."""
    offset = os.path.getsize(part) if os.path.exists(part) else 0
    response, resumed = _open(url, offset)
    if response is None:
        return
    what = f"resuming at {_megabytes(offset)}" if resumed else "downloading"
    sys.stderr.write(f"{what} {url}\n")
    offset = offset if resumed else 0
    total = _expected_total(response, offset)
    with response, open(part, "ab" if resumed else "wb") as out:
        try:
            done = _copy(response, out, url, offset, total)
        except (http.client.IncompleteRead, ConnectionError, TimeoutError,
                urllib.error.URLError) as err:
            raise InputError(f"{url}: the download broke off ({type(err).__name__}); "
                             f"what came is kept in {part}: run again to resume") from None
    if total is not None and done != total:
        raise InputError(f"{url}: got {done} of {total} bytes; what came is kept in {part}: "
                         "run again to resume")


def _read_through(stream):
    while stream.read(CHUNK):
        pass


def archive_problem(path, name):
    """Why the file at ``path`` (named ``name``) is not a whole archive, or None."""
    try:
        if name.endswith((".tgz", ".tar.gz", ".tar")):
            with tarfile.open(path) as tar:
                for member in tar:
                    if member.isfile():
                        _read_through(tar.extractfile(member))
        elif name.endswith(".gz"):
            with gzip.open(path, "rb") as stream:
                _read_through(stream)
        elif name.endswith(".zip"):
            with zipfile.ZipFile(path) as archive:
                bad = archive.testzip()
                if bad:
                    return f"member {bad} is damaged"
    except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile, zlib.error) as err:
        return f"not a complete {name.rsplit('.', 1)[-1]} file ({type(err).__name__}: {err})"
    return None


def file_problem(path, name, md5=None, size=None):
    """Why ``path`` fails the published size or checksum or is a broken archive, or None."""
    if os.path.getsize(path) == 0:
        return "it is empty"
    if size is not None and os.path.getsize(path) != size:
        return f"{os.path.getsize(path)} bytes where {size} are published"
    if md5:
        digest = hashlib.md5()
        with open(path, "rb") as stream:
            for chunk in iter(lambda: stream.read(CHUNK), b""):
                digest.update(chunk)
        if digest.hexdigest() != md5.lower():
            return f"MD5 {digest.hexdigest()} where {md5} is published"
    return archive_problem(path, name)


def download(url, path, md5=None, size=None):
    """Fetch ``url`` to ``path`` (skipped when ``path`` exists) and check it."""
    if os.path.exists(path):
        return path
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    part = path + ".part"
    fetch(url, part)
    sys.stderr.write(f"checking {os.path.basename(path)}\n")
    problem = file_problem(part, os.path.basename(path), md5, size)
    if problem:
        os.replace(part, path + ".bad")
        raise InputError(f"{url}: the downloaded file is bad: {problem}. It was moved to "
                         f"{path}.bad: delete it and run again to download it anew "
                         "(if that fails again, the URL or the server's copy is wrong)")
    os.replace(part, path)
    return path


def main(argv=None):
    args = parse_args(argv)
    print(download(args.url, args.path, args.md5, args.size))


if __name__ == "__main__":
    run_main(main)
