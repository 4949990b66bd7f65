import sys

from recipesearch.cli import main

sys.exit(main())
