"""Every relative link of the README and the docs leads somewhere: the file
exists and, where the link names a heading (#anchor), the page has it."""

import re

from conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "examples").glob("*.md")),
         *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "projects").rglob("*.md")),
         *sorted((REPO / "examples" / "data").rglob("README*"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def anchors(page):
    """GitHub's anchors of ``page``'s headings: lower case, punctuation dropped,
    spaces to hyphens, a -1, -2 ... suffix on repeats."""
    seen, found = {}, set()
    for heading in re.findall(r"^#+\s+(.*?)\s*$", FENCE.sub("", page.read_text()), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        for target in LINK.findall(FENCE.sub("", page.read_text())):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
