import sys

from dyafdb.cli import main

sys.exit(main())
