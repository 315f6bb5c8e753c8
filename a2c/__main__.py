import sys

from a2c.cli import main

sys.exit(main())
