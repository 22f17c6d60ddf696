"""``python -m dgsr.bench ...`` = ``dgsr bench ...``."""

from .cli import main

raise SystemExit(main())
