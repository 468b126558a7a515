"""Write ``agentmem/data/schema.json`` (what ``agentmem browse`` shows) from ``docs/schema.md``.

Run it after describing a new table or column in ``docs/schema.md``:

    python tools/schema_json.py

``tests/test_browse.py`` fails while the two disagree.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentmem.schemadoc import parse  # noqa: E402

DOC = ROOT / "docs" / "schema.md"
OUT = ROOT / "agentmem" / "data" / "schema.json"


def main() -> None:
    text = parse(DOC.read_text("utf-8")).to_json()
    OUT.write_text(text, "utf-8")
    print(f"wrote {OUT.relative_to(ROOT)} from {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
