"""Allow ``python -m slicectl``."""

from slicectl.cli.main import main

raise SystemExit(main())
