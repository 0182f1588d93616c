import sys

from specviz.app.cli import main

sys.exit(main())
