"""``python -m benchmarks.lessons``: see :mod:`benchmarks.lessons.run`."""

from .run import main

raise SystemExit(main())
