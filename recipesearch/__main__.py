"""``python -m recipesearch``: the ``recipesearch`` command line (``cli.py``)."""
import sys

from recipesearch.cli import main

sys.exit(main())
