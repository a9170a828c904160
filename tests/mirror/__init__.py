"""A local stand-in for the servers the data-prep scripts download from,
built at test time from the demo text of examples/data: News Crawl .gz files,
a Europarl-style .tgz, the XSum archive and split file, sacrebleu's cache of
newstest SGML or plain text, and an HTTP server on 127.0.0.1 that answers
Range requests and can break off or stall a transfer."""

import contextlib
import functools
import gzip
import http.server
import io
import json
import os
import tarfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "data"


def demo_lines(name):
    return (DEMO / name).read_text(encoding="utf-8").splitlines()


def write_gz(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.writelines(line + "\n" for line in lines)


def news_crawl(root, lang, years, lines):
    """root/LANG/news.YEAR.LANG.shuffled.deduped.gz, ``lines`` dealt out over the years."""
    for i, year in enumerate(years):
        write_gz(root / lang / f"news.{year}.{lang}.shuffled.deduped.gz", lines[i::len(years)])


def add_to_tar(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def tgz(path, files):
    """A .tgz holding ``files``: {name in the archive: lines}."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, lines in files.items():
            add_to_tar(tar, name, "".join(line + "\n" for line in lines).encode())


def sgml(lines, lang):
    """The SGML of the WMT test sets before 2021, as sacrebleu reads it."""
    segs = "".join(f'<seg id="{i}">{line}</seg>\n' for i, line in enumerate(lines, 1))
    return (f'<srcset setid="test" srclang="any">\n<doc sysid="ref" docid="d1" '
            f'genre="news" origlang="{lang}">\n<p>\n{segs}</p>\n</doc>\n</srcset>\n')


def sacrebleu_cache(root, name, pair, src_lines, ref_lines):
    """Put test set ``name`` of ``pair`` in a $SACREBLEU folder as sacrebleu
    leaves it after downloading: its tarball and the SGML files unpacked
    beside it. sacrebleu then converts the SGML itself and does not download
    (it fetches only where the tarball is missing)."""
    from sacrebleu.dataset import DATASETS

    dataset = DATASETS[name]
    raw = Path(root) / name / "raw"
    files = {}
    for member, lines, lang in zip(dataset.langpairs[pair], (src_lines, ref_lines),
                                   pair.split("-")):
        files[member] = sgml(lines, lang).encode()
        (raw / member).parent.mkdir(parents=True, exist_ok=True)
        (raw / member).write_bytes(files[member])
    with tarfile.open(raw / f"{name.replace('/', '_')}.{os.path.basename(dataset.data[0])}",
                      "w:gz") as tar:
        for member, data in files.items():
            add_to_tar(tar, member, data)


def sacrebleu_text(root, name, pair, src_lines, ref_lines):
    """Put test set ``name`` of ``pair`` in a $SACREBLEU folder as sacrebleu's
    plain-text files, which it reads before anything else:
    NAME/NAME_WITH_UNDERSCORES.PAIR.{src,ref,docid,genre,origlang}."""
    folder = Path(root) / name
    folder.mkdir(parents=True, exist_ok=True)
    count = len(src_lines)
    fields = {"src": src_lines, "ref": ref_lines, "docid": ["d1"] * count,
              "genre": ["news"] * count, "origlang": [pair.split("-")[0]] * count}
    for field, lines in fields.items():
        (folder / f"{name.replace('/', '_')}.{pair}.{field}").write_text(
            "".join(line + "\n" for line in lines), encoding="utf-8")


def xsum(root, splits):
    """root/XSUM-...tar.gz and its split file; ``splits``: {split: [(document, summary)]}."""
    ids, files, number = {}, {}, 1000
    for split, articles in splits.items():
        ids[split] = []
        for document, summary in articles:
            number += 1
            ids[split].append(str(number))
            body = "\n".join(document.split(". ")) + "\nShare this with\nEmail\n"
            files[f"bbc-summary-data/{number}.summary"] = [
                "[SN]URL[SN]", f"http://www.bbc.com/news/{number}", "", "[SN]TITLE[SN]",
                summary[:30], "", "[SN]FIRST-SENTENCE[SN]", summary, "", "[SN]RESTBODY[SN]",
                body]
    tgz(root / "XSUM-EMNLP18-Summary-Data-Original.tar.gz", files)
    (root / "XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json").write_text(json.dumps(ids))


class MirrorHandler(http.server.SimpleHTTPRequestHandler):
    """GET with Range requests; paths in ``server.broken`` are cut off after
    half the body once, paths in ``server.stalled`` stall there until
    ``server.release`` is set."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        path = Path(self.translate_path(self.path))
        self.server.requests.append((self.path, self.headers.get("Range")))
        if not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        start = int(self.headers.get("Range", "bytes=0-")[6:].split("-")[0])
        if start >= len(data) > 0:
            self.send_error(416)
            return
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        body, half = data[start:], (len(data) - start) // 2
        if self.path in self.server.broken:
            self.server.broken.discard(self.path)
            body = body[:half]
        elif self.path in self.server.stalled:
            self.wfile.write(body[:half])
            self.wfile.flush()
            self.server.release.wait(60)
            body = body[half:]
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(root):
    """An HTTP server for the folder ``root``: yields it, with its base URL in
    ``server.url`` and the (path, Range header) of each request in ``server.requests``."""
    handler = functools.partial(MirrorHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.handle_error = lambda request, address: None  # a client killed mid-transfer
    server.requests, server.broken, server.stalled = [], set(), set()
    server.release = threading.Event()
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    server.root = Path(root)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()
