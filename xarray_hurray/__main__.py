"""``python -m xarray_hurray``: the ``hurray`` command."""

from .cli import main

raise SystemExit(main())
