"""`python -m poppy_jit.bench [--quick] [--json PATH] [--plot PATH] [--apps a,b]`."""
import sys

from .harness import main

sys.exit(main())
