"""The training corpus: the King James Version of the Bible as Debian's bible-kjv package ships
it (the text's copyright expired; the retrieval program is GPL-2+). Read through the package's own
`bible` program, verse references removed, one document per chapter (its verses joined by spaces).
"""

import re
import shutil
import subprocess

PACKAGE = "bible-kjv"
WHOLE_BIBLE = "gen1:1-rev22:21"
_VERSE = re.compile(r"^(\d?[A-Za-z]+)(\d+):(\d+) (.*)$")


class CorpusMissing(RuntimeError):
    pass


def package_version():
    p = subprocess.run(["dpkg-query", "-W", "-f=${Version}", PACKAGE], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


def chapters():
    """The corpus as a list of documents, one per chapter, in canonical order."""
    exe = shutil.which("bible")
    if exe is None or package_version() is None:
        raise CorpusMissing(
            "the corpus package %s is not installed (its `bible` program prints "
            "the text); install it with: sudo apt-get install %s" % (PACKAGE, PACKAGE)
        )
    out = subprocess.run([exe, "-f", WHOLE_BIBLE], capture_output=True, text=True, check=True).stdout
    docs, key = [], None
    for line in out.splitlines():
        m = _VERSE.match(line)
        if m is None:
            raise RuntimeError("unexpected line from `bible`: %r" % line[:80])
        if (m.group(1), m.group(2)) != key:
            key = (m.group(1), m.group(2))
            docs.append([])
        docs[-1].append(m.group(4).strip())
    return [" ".join(verses) for verses in docs]
