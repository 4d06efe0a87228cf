"""Shared test settings: warnings from dependencies that are not ours stay quiet."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # so that tests can `import reference`
