"""Print the runtime dependencies of pyproject.toml, and those of its ``fast`` extra
(the compiled kernels), pinned to their declared floors.

``name[extras]>=X`` becomes ``name==X`` (an environment marker, ``; python_version <
'3.14'``, kept), one per line, for use as a pip constraints file: CI installs the
package with these and runs the test suite, so the floors pyproject.toml declares
are floors the code was seen to work with.  A dependency without a ``>=`` floor is
an error.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

REQUIREMENT = re.compile(
    r"^\s*([A-Za-z0-9._-]+)(\[[^\]]*\])?\s*>=\s*([^,;\s]+)\s*(;\s*[^;]+?)?\s*$"
)


def main() -> int:
    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    fast = project["project"]["optional-dependencies"]["fast"]
    for requirement in project["project"]["dependencies"] + fast:
        match = REQUIREMENT.match(requirement)
        if match is None:
            print(f"no single >= floor in dependency {requirement!r}", file=sys.stderr)
            return 1
        print(f"{match.group(1)}=={match.group(3)}{match.group(4) or ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
