"""Build corpora/demo/passages.jsonl.gz from the evaluation dev files (run once; the output is committed).

Usage: python scripts/build_demo_corpus.py ../shared/data/eval corpora/demo/passages.jsonl.gz
Every unique (title, text) passage of the four files, with the dataset it came from.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path


def main(source_dir: str, target: str) -> None:
    seen: set[tuple[str, str]] = set()
    rows = []
    for path in sorted(Path(source_dir).glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            for passage in item["passages"]:
                key = ((passage.get("title") or "").strip(), " ".join((passage.get("text") or "").split()))
                if key[1] and key not in seen:
                    seen.add(key)
                    rows.append({"title": key[0], "text": key[1], "dataset": path.stem})
    with gzip.open(target, "wt", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(rows)} passages -> {target}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
